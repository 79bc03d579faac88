//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
)

// TestRunFencedCounterNotNumberStops: a fencing counter that holds no
// number (written by hand, or a lock named as the counter) fails every
// fenced acquisition of its slot for good, which run says at once, exit 1,
// rather than retrying for all of --wait (it did, and without --wait for
// ever, the script's garbled reply taken for a transient failure, and exit
// 69 said "try again later"). Nothing is left on the nodes: the script
// fails before it sets the key.
func TestRunFencedCounterNotNumberStops(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "k-" + d
			for _, s := range servers {
				if _, err := s.Do(t.Context(), "SET", driver.FenceKey(key), "not a number"); err != nil {
					t.Fatal(err)
				}
			}
			r := invoke(t, "", "run", "--driver", d, "--fencing", "--wait", "60s", "--nodes", addrs, key, "--", "true")
			if r.code != exitFailure || !strings.Contains(r.stderr, "answered ERR fencing counter holds no number, which retrying cannot fix") {
				t.Errorf("run --fencing with every node's counter not a number: want exit 1 and the counter named as what retrying cannot fix, got %v", r)
			}
			for _, s := range servers {
				if n, err := s.Do(t.Context(), "EXISTS", key); err != nil || n != int64(0) {
					t.Errorf("%s: EXISTS %s = %v, %v after the failed run; want 0", s.Addr(), key, n, err)
				}
			}
		})
	}
}
