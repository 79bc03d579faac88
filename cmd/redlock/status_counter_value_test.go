//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// status never prints a lock's value, not even where a lock's key is the
// name of a fencing counter that status reads: a lock named as the counter
// in use (redlock:fence:{T}, driver.FenceKey, or with --prefix P the
// prefix's, P+redlock:fence:{T}, driver.PrefixFenceKey) holds its secret
// value where status GETs the counter of KEY; status then says the counter
// is not a number, without showing what it holds, as the acquiring script
// fails on it. A lock named as an old counter (driver.OldFenceKeys: {KEY}:fence,
// or for a prefixed KEY the counter every prefix shared) is none to the
// script, and to status too: nothing is said of it. The README tells users
// to keep lock names out of those.
func TestStatusHidesLockValueInCounter(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, tc := range []struct {
		lockPrefix, name string // the lock on the counter's name
		prefix, key      string // what status is asked
		notANumber       bool
	}{
		{"", driver.FenceKey("x"), "", "x", true},
		{"p:", driver.FenceKey("p:x"), "p:", "x", true}, // p:redlock:fence:{T}
		{"", driver.LegacyFenceKey("y"), "", "y", false},
		{"", driver.FenceKey("p:z"), "p:", "z", false}, // the old shared counter of p:z
	} {
		holder := start(t, "run", "--nodes", addrs, "--prefix", tc.lockPrefix, "--key", tc.name, "--", "sh", "-c", "echo held; exec sleep 60")
		holder.waitLine("held", 30*time.Second)
		// The lock's value, from a node that granted it: "held" is
		// printed once a quorum did, and the last node's SET may still be
		// on its way.
		value := ""
		for _, s := range servers {
			v, err := s.Do(t.Context(), "GET", tc.lockPrefix+tc.name)
			if err != nil {
				t.Fatalf("GET %s: %v", tc.lockPrefix+tc.name, err)
			}
			if value, _ = v.(string); value != "" {
				break
			}
		}
		if value == "" {
			t.Fatalf("GET %s: no node holds the lock that run holds", tc.lockPrefix+tc.name)
		}
		for _, args := range [][]string{{"status", "--nodes", addrs, "--prefix", tc.prefix, tc.key}, {"status", "--json", "--nodes", addrs, "--prefix", tc.prefix, tc.key}} {
			r := invoke(t, "", args...)
			if got := strings.Contains(r.stdout+r.stderr, "not a number"); got != tc.notANumber {
				t.Errorf("lock %s%s, redlock %s: counter called not a number: %v, want %v; got %v", tc.lockPrefix, tc.name, strings.Join(args, " "), got, tc.notANumber, r)
			}
			if !tc.notANumber && r.code != 0 {
				t.Errorf("lock %s%s, redlock %s: exit %d, want 0: an old counter that is not a number is none", tc.lockPrefix, tc.name, strings.Join(args, " "), r.code)
			}
			if strings.Contains(r.stdout+r.stderr, value) {
				t.Errorf("lock %s%s, redlock %s printed the lock's value %q:\n%v", tc.lockPrefix, tc.name, strings.Join(args, " "), value, r)
			}
		}
	}
}
