package valkeygo_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/rueidiscore/rueidiscoretest"
)

// The client a caller might configure, from a URL.
func TestDriver(t *testing.T) {
	rueidiscoretest.Run(t, "valkeygo", valkeygo.Driver{}, valkeygo.New, func(addr string) (valkey.Client, error) {
		opt := valkey.MustParseURL("redis://" + addr)
		opt.ForceSingleClient, opt.DisableCache, opt.DisableRetry = true, true, true
		return valkey.NewClient(opt)
	})
}
