package driver_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// TestMillisecondsString: the decimal form of Milliseconds, the same from
// its cache as at first, also for values that share a place in it and under
// concurrent use; a TTL formatted before costs no allocation.
func TestMillisecondsString(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want string
	}{
		{time.Nanosecond, "1"},
		{time.Millisecond, "1"},
		{1500 * time.Microsecond, "2"},
		{17 * time.Millisecond, "17"}, // 17 and 1 share a place
		{30 * time.Second, "30000"},
		{24 * time.Hour, "86400000"},
	} {
		for range 3 {
			if got := driver.MillisecondsString(tc.ttl); got != tc.want {
				t.Fatalf("MillisecondsString(%v) = %q, want %q", tc.ttl, got, tc.want)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				ms := int64(1 + (i*7+g)%64) // colliding places, all goroutines at once
				if got, want := driver.MillisecondsString(time.Duration(ms)*time.Millisecond), strconv.FormatInt(ms, 10); got != want {
					t.Errorf("MillisecondsString(%dms) = %q, want %q", ms, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	driver.MillisecondsString(30 * time.Second)
	if n := testing.AllocsPerRun(100, func() { driver.MillisecondsString(30 * time.Second) }); n != 0 {
		t.Fatalf("MillisecondsString of a TTL formatted before: %v allocations, want 0", n)
	}
}
