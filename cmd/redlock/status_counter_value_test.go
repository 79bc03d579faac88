//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// status never prints a lock's value, not even where a lock's key is the
// name of a fencing counter that status reads: a lock named
// redlock:fence:{T} (driver.FenceKey) or {KEY}:fence (the per-key counter of
// earlier versions) holds its secret value where status GETs the counter of
// KEY. The README tells users to keep lock names out of those; status then
// says the counter is not a number, without showing what it holds.
func TestStatusHidesLockValueInCounter(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for key, name := range map[string]string{"x": driver.FenceKey("x"), "y": driver.LegacyFenceKey("y")} {
		holder := start(t, "run", "--nodes", addrs, "--key", name, "--", "sh", "-c", "echo held; exec sleep 60")
		holder.waitLine("held", 30*time.Second)
		v, err := servers[0].Do(t.Context(), "GET", name)
		value, _ := v.(string)
		if err != nil || value == "" {
			t.Fatalf("GET %s: %v, %v", name, v, err)
		}
		for _, args := range [][]string{{"status", "--nodes", addrs, key}, {"status", "--json", "--nodes", addrs, key}} {
			r := invoke(t, "", args...)
			if !strings.Contains(r.stdout+r.stderr, "not a number") {
				t.Errorf("lock %s, redlock %s: want the counter called not a number, got %v", name, strings.Join(args, " "), r)
			}
			if strings.Contains(r.stdout+r.stderr, value) {
				t.Errorf("lock %s, redlock %s printed the lock's value %q:\n%v", name, strings.Join(args, " "), value, r)
			}
		}
	}
}
