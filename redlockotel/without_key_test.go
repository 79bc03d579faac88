package redlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
)

// WithoutKey leaves redlock.key out of every span (Do, Lock, its attempts,
// the Extends, Unlock, a refused TryLock) and out of the redlock.lock.lost
// event, whose other attributes stay; the metrics carry no key either way.
func TestWithoutKey(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	c := open(t, redistest.Addrs(servers), tel.option(redlockotel.WithoutKey()), redlock.WithExtendInterval(50*time.Millisecond))
	ctx := t.Context()
	const key = "secret-customer-42"

	err := c.Do(ctx, key, func(fctx context.Context) error {
		_, err := c.TryLock(ctx, key) // refused: held by this Do
		require.Error(t, err)
		for _, s := range servers {
			_, err := s.Do(ctx, "DEL", key)
			require.NoError(t, err)
		}
		<-fctx.Done() // the next Extend finds the lock lost
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)

	names := map[string]int{}
	lostEvents := 0
	for _, s := range tel.spans.Ended() {
		names[s.Name()]++
		_, has := attr(s.Attributes(), "redlock.key")
		assert.False(t, has, "%s has redlock.key", s.Name())
		for _, e := range s.Events() {
			if e.Name != "redlock.lock.lost" {
				continue
			}
			lostEvents++
			_, has := attr(e.Attributes, "redlock.key")
			assert.False(t, has, "the redlock.lock.lost event has redlock.key")
			how, ok := attr(e.Attributes, "redlock.lost.how")
			assert.True(t, ok, "the event keeps redlock.lost.how")
			assert.NotEmpty(t, how.AsString())
		}
	}
	for _, name := range []string{"redlock.Do", "redlock.Lock", "redlock.TryLock", "redlock.Extend"} {
		assert.NotZero(t, names[name], "no %s span recorded", name)
	}
	assert.Equal(t, 2, names["redlock.TryLock"], "Do's attempt and the refused TryLock")
	assert.Equal(t, 1, lostEvents, "the Extend that found the lock lost has the event")
	noKey(t, tel.metrics(t))
}
