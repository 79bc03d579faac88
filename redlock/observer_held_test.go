package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A lock whose validity ran out unnoticed is reported expired by the first
// call after it (Unlock, Extend, TTL); its LockEnd.Held is its life, from the
// grant to the end of its validity, not to that call, which may come long
// after: redlockotel's redlock.hold.duration and the logger's "held" would
// otherwise say the lock was held an hour.
func TestExpiredLockHeldUntilValidity(t *testing.T) {
	const ttl = time.Second
	for _, call := range []string{"Unlock", "Extend", "TTL"} {
		t.Run(call, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, nodes := memNodes(3)
				r := &recorder{id: "r"}
				c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithTTL(ttl))
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				life := time.Until(l.Until())
				time.Sleep(time.Hour)
				switch call {
				case "Unlock":
					_ = l.Unlock(t.Context())
				case "Extend":
					_ = l.Extend(t.Context(), ttl)
				case "TTL":
					_, _ = l.TTL(t.Context())
				}
				ends := r.lockEnds()
				require.Len(t, ends, 1)
				assert.Equal(t, redlock.EndExpired, ends[0].How)
				assert.Equal(t, life, ends[0].Held, "held from the grant to the end of its validity")
			})
		})
	}
}
