package redlock_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/go-redlock/redlock/redlock"
)

// ExponentialBackoff doubles from min (1ms when min is not positive) up to
// max, at any attempt number, with no overflow: each wait is in [w/2, w].
func TestExponentialBackoffBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max time.Duration
		attempt  int
		lo, hi   time.Duration
	}{
		{"first", 10 * time.Millisecond, time.Second, 1, 5 * time.Millisecond, 10 * time.Millisecond},
		{"doubled", 10 * time.Millisecond, time.Second, 3, 20 * time.Millisecond, 40 * time.Millisecond},
		{"capped", 10 * time.Millisecond, time.Second, 1e9, 500 * time.Millisecond, time.Second},
		{"zero min doubles from 1ms", 0, 250 * time.Millisecond, 3, 2 * time.Millisecond, 4 * time.Millisecond},
		{"negative min", -time.Second, 250 * time.Millisecond, 1e9, 125 * time.Millisecond, 250 * time.Millisecond},
		{"huge max", 10 * time.Millisecond, math.MaxInt64, 100, math.MaxInt64 / 2, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := redlock.ExponentialBackoff(tc.min, tc.max)
			for range 20 {
				w := b(tc.attempt)
				assert.GreaterOrEqual(t, w, tc.lo)
				assert.LessOrEqual(t, w, tc.hi)
			}
		})
	}
}
