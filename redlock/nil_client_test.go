package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redlock"
)

// Nodes that a driver's New made over a nil client fail every call, and no
// retry gives them a client: Lock and Do stop at once, as on any error
// retrying cannot fix, with an error that names it (driver.ErrNilClient),
// rather than retrying until their context ends (for ever, without a
// deadline).
func TestLockStopsOnNilClientNodes(t *testing.T) {
	nilNodes := map[string]func() driver.Node{
		"goredis":  func() driver.Node { return goredis.New(nil) },
		"redigo":   func() driver.Node { return redigo.New(nil) },
		"rueidis":  func() driver.Node { return rueidis.New(nil) },
		"valkeygo": func() driver.Node { return valkeygo.New(nil) },
	}
	cases := map[string][]driver.Node{}
	var all []driver.Node
	for name, newNil := range nilNodes {
		cases[name] = []driver.Node{newNil()} // one node: its name is the driver's
		all = append(all, newNil())
	}
	cases["every driver"] = all
	for name, nodes := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.New(nodes)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			// A bound on the test, not a timing: the error says
			// whether Lock stopped by itself or by the context.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			check := func(call string, err error) {
				t.Helper()
				require.ErrorIs(t, err, redlock.ErrNotObtained, call)
				require.ErrorIs(t, err, driver.ErrNilClient, call)
				require.NotErrorIs(t, err, context.DeadlineExceeded, "%s retried until its context ended", call)
				var votes *redlock.VoteError
				require.True(t, errors.As(err, &votes), call)
				require.Greater(t, votes.Permanent, votes.Nodes-votes.Needed, "%s: %v", call, err)
			}
			_, err = c.Lock(ctx, "k")
			check("Lock", err)
			check("Do", c.Do(ctx, "k", func(context.Context) error { return nil }))
		})
	}
}
