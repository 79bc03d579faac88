package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A Lock.TTL sent before Until whose nodes answer after it, the key gone
// from them by then (expired at its TTL), finds a lock whose validity had
// already ended: it expired then, as Done's timer reports it when Done was
// called before, and as Extend and Unlock treat a lock over before their
// verdict. Before, TTL ended it as found lost (EndLostTTL, Held past Until)
// when Done had not been called, and LockEnd said EndExpired only when it had.
func TestTTLAnsweredAfterUntilFindsExpired(t *testing.T) {
	for _, done := range []bool{true, false} {
		name := "without Done"
		if done {
			name = "Done called before"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = time.Second
				mem, nodes := memNodes(3)
				obs := &lockEnds{}
				c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithObserver(obs))
				ctx := context.Background()
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				if done {
					l.Done()
				}
				until := l.Until()
				time.Sleep(time.Until(until) - 20*time.Millisecond)
				for _, m := range mem {
					m.SetLatency(100 * time.Millisecond) // the reads land after the key's TTL
				}
				_, err = l.TTL(ctx)
				require.ErrorIs(t, err, redlock.ErrLockLost)
				e := obs.only(t)
				require.Equal(t, redlock.EndExpired, e.How, "LockEnd: %+v", e)
				require.LessOrEqual(t, e.Held, ttl, "held until Until, not until TTL's verdict")
				for _, m := range mem {
					m.SetLatency(0)
				}
			})
		})
	}
}
