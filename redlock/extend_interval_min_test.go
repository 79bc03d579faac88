package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// An extension interval given below 1ms is refused, to New and to Do, as the
// default interval never goes below it: Do would extend back to back (with
// 1ns, an outside review counted 3,659 PEXPIREs on one node in a 500ms Do,
// against 365 with 1ms). 1ms itself is accepted.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestExtendIntervalBelowOneMillisecondRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		for _, d := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond - 1} {
			c, err := redlock.New(nodes, redlock.WithExtendInterval(d))
			require.Nil(t, c, "New with an extend interval of %v", d)
			require.ErrorContains(t, err, "extend interval "+d.String()+" is shorter than 1ms")
		}
		c := newClient(t, nodes, redlock.WithExtendInterval(time.Millisecond))
		ran := false
		err := c.Do(t.Context(), "k", func(context.Context) error { ran = true; return nil }, redlock.WithExtendInterval(time.Microsecond))
		require.ErrorContains(t, err, "Do: extend interval 1µs is shorter than 1ms")
		require.False(t, ran, "fn ran with a refused option")
		require.NoError(t, c.Do(t.Context(), "k", func(context.Context) error { ran = true; return nil }, redlock.WithExtendInterval(time.Millisecond)))
		require.True(t, ran)
	})
}
