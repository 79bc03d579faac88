package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"

	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/internal/rueidiscore/rueidiscoretest"
)

func TestDriver(t *testing.T) {
	rueidiscoretest.Run(t, "rueidis", rueidisdriver.Driver{}, rueidisdriver.New, func(addr string) (rueidis.Client, error) {
		return rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true,
		})
	})
}
