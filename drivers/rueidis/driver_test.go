package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/internal/rueidiscore/rueidiscoretest"
)

func TestDriver(t *testing.T) {
	rueidiscoretest.Run(t, rueidiscoretest.Target{
		Name:   "rueidis",
		Driver: rueidisdriver.Driver{},
		Client: func(t *testing.T, addr string) func() driver.Node {
			c, err := rueidis.NewClient(rueidis.ClientOption{
				InitAddress:       []string{addr},
				ForceSingleClient: true,
				DisableCache:      true,
				DisableRetry:      true,
			})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			return func() driver.Node { return rueidisdriver.New(c) }
		},
		NewNil: func() driver.Node { return rueidisdriver.New(nil) },
	})
}
