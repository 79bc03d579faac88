package security_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// nodeCallErrs is an Observer that keeps the error of every node call.
type nodeCallErrs struct {
	redlock.NopObserver
	x *texts
}

func (o nodeCallErrs) NodeCall(_ context.Context, c redlock.NodeCall) { o.x.addErr(c.Err) }

// A server that does not have a command the library sends (rename-command in
// redis.conf, which the README names as an error retrying cannot fix) replies
// "ERR unknown command 'SET', with args beginning with: 'key' 'VALUE' 'NX'
// ...": it echoes the command's arguments, the lock's value among them. The
// value lets its holder release the lock and must appear in no error, log
// line (ours, or go-redis's) or observed node call. Before the drivers cut the echo off, every
// driver's TryLock error showed the value with SET renamed away, and
// goredis's Extend and Unlock errors with EVALSHA renamed away.
func TestEchoedArgumentsHideLockValue(t *testing.T) {
	for _, renamed := range []string{"SET", "EVALSHA"} {
		servers := redistest.NewServers(t, 3, redistest.WithConfig("rename-command", renamed, `""`))
		for _, d := range drivers {
			t.Run(renamed+"/"+d.name, func(t *testing.T) {
				ctx := t.Context()
				var x texts
				var values valueSet
				var slogged logs
				nodes := make([]driver.Node, len(servers))
				for i, s := range servers {
					n, err := d.d.Open(s.Addr())
					require.NoError(t, err)
					nodes[i] = recorder{Node: n, values: &values}
				}
				c, err := redlock.New(nodes, redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(time.Second),
					redlock.WithObserver(nodeCallErrs{x: &x}),
					redlock.WithLogger(slog.New(slog.NewTextHandler(&slogged, &slog.HandlerOptions{Level: slog.LevelDebug}))))
				require.NoError(t, err)
				defer func() { x.addErr(c.Close()) }()

				l, err := c.TryLock(ctx, "echoed")
				x.addErr(err)
				if renamed == "SET" {
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					require.ErrorContains(t, err, "unknown command", "the error names the server's refusal")
				} else if err == nil {
					err = l.Extend(ctx, 5*time.Second)
					x.addErr(err)
					x.addErr(l.Unlock(ctx))
				}
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				err = c.Do(wctx, "echoed-do", func(context.Context) error { return nil })
				cancel()
				x.addErr(err)
				if renamed == "SET" { // still an error retrying cannot fix: Do stops at once
					var votes *redlock.VoteError
					require.ErrorAs(t, err, &votes)
					require.Greater(t, votes.Permanent, votes.Nodes-votes.Needed, "%v", err)
					require.NotErrorIs(t, err, context.DeadlineExceeded)
				}
				x.add(slogged.String(), logged.String())

				vals := values.list()
				require.NotEmpty(t, vals, "the recorder saw no lock value")
				x.check(t, vals)
			})
		}
	}
}
