package driver

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestMillisecondsString checks the decimal form of TTLs, repeated (the kept
// strings), sharing a slot of msStrings (values 8 apart), rounded up, and
// from goroutines at once (under -race).
func TestMillisecondsString(t *testing.T) {
	cases := []struct {
		ttl  time.Duration
		want string
	}{
		{time.Millisecond, "1"},
		{9 * time.Millisecond, "9"}, // the slot of 1
		{time.Millisecond + 1, "2"}, // rounded up
		{10 * time.Second, "10000"},
		{10*time.Second + 8*time.Millisecond, "10008"}, // the slot of 10000
		{30 * time.Second, "30000"},
		{0, "0"},
	}
	for range 3 {
		for _, c := range cases {
			if got := MillisecondsString(c.ttl); got != c.want {
				t.Fatalf("MillisecondsString(%v) = %q, want %q", c.ttl, got, c.want)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				ms := int64(g*1000 + i%16)
				if got, want := MillisecondsString(time.Duration(ms)*time.Millisecond), strconv.FormatInt(ms, 10); got != want {
					t.Errorf("MillisecondsString(%dms) = %q, want %q", ms, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestMillisecondsStringKept checks that a TTL formatted before costs no
// allocation.
func TestMillisecondsStringKept(t *testing.T) {
	MillisecondsString(10 * time.Second)
	if n := testing.AllocsPerRun(100, func() { MillisecondsString(10 * time.Second) }); n != 0 {
		t.Fatalf("%v allocations per call of a kept TTL, want 0", n)
	}
}
