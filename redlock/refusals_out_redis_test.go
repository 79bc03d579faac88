package redlock_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestRefusalsOutDecide through every driver, against servers: of three
// nodes, one is down (nothing listens on its port: the connection is
// refused at once) and two refuse the key to the ACL user (NOPERM), one of
// them far (its replies 50ms late, through a proxy). The down node's
// error and the near node's refusal decided each attempt before the far
// node's refusal came, and Lock and Do retried until their context ended;
// they now stop at the first attempt.
func TestRedisRefusalsOutDecide(t *testing.T) {
	const password = "right-Pa55word"
	servers := redistest.NewServers(t, 2)
	for _, s := range servers {
		_, err := s.Do(t.Context(), "ACL", "SETUSER", "limited", "reset", "on", ">"+password, "~other:*", "+@all")
		require.NoError(t, err)
	}
	far := testproxy.New(t, servers[1].Addr(), testproxy.ReplyDelay(50*time.Millisecond))
	addrs := append(redistest.DownAddrs(t, 1), servers[0].Addr(), far.Addr())
	for i, a := range addrs {
		addrs[i] = (&url.URL{Scheme: "redis", Host: a, User: url.UserPassword("limited", password)}).String()
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, addrs, redlock.WithNodeTimeout(2*time.Second), redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			key := "refused-" + name
			for range 5 { // each attempt a new race of the down node's error and the second refusal
				_, err = c.Lock(ctx, key)
				require.NoError(t, ctx.Err(), "Lock waited for its context: %v", err)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorIs(t, err, redlock.ErrUnavailable)
				require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
				var v *redlock.VoteError
				require.ErrorAs(t, err, &v)
				require.Equal(t, 2, v.Permanent, "%v", err)

				err = c.Do(ctx, key, func(context.Context) error { return errors.New("must not run") })
				require.NoError(t, ctx.Err(), "Do waited for its context: %v", err)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
			}
		})
	}
}
