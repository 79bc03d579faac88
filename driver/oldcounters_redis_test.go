package driver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// Both fencing scripts, run on a real server, take an old counter
// (driver.OldFenceKeys) for its number, whatever digits it is written with:
// the largest counter is the largest number, so that tokens keep rising. An
// old counter with leading zeros ("0000000003", a counter written by hand)
// was the larger by its length: with the counter in use at 5, the scripts
// returned 3, and the next token (4) fell below one already granted (5).
// An old counter that is not a decimal number counts as none.
func TestScriptsReadOldCountersAsNumbers(t *testing.T) {
	do := serverDo(t, redistest.NewServer(t))
	for _, tc := range []struct {
		old  string // the shared counter of earlier versions; "" for none
		want string
	}{
		{"", "5"},
		{"3", "5"},
		{"7", "7"},
		{"0000000003", "5"},
		{"0000000007", "7"},
		{"0000000000", "5"},
		{"000000000000000000000000000012", "12"},
		{" 9", "5"},
		{"-9", "5"},
		{"+9", "5"},
		{"9 ", "5"},
		// Above 2^64-1, which no version wrote (tokens are uint64): none,
		// as status reads it, not a reply every acquisition fails on.
		{"18446744073709551615", "18446744073709551615"},
		{"18446744073709551616", "5"},
		{"99999999999999999999999", "5"},
		{"000018446744073709551616", "5"},
	} {
		for name, script := range map[string]driver.Script{"setnx_fence": driver.SetNXFenceScript(), "setnx_again": driver.SetNXAgainScript()} {
			key := fmt.Sprintf("p:%s:%q", name, tc.old)
			fk := driver.PrefixFenceKey("p:", key)
			do("SET", fk, "5")
			if tc.old != "" {
				do("SET", driver.FenceKey(key), tc.old)
			}
			args := []string{"EVAL", script.Source(), "2", key, fk, "value", "60000"}
			r := do(append(args, driver.OldFenceKeys(key, fk)...)...)
			if a, ok := r.([]any); !ok || len(a) != 2 || a[0] != int64(1) || a[1] != tc.want {
				t.Errorf("%s with the counter in use at 5 and an old one holding %q = %v, want [1 %s]", name, tc.old, r, tc.want)
			}
		}
	}
}

// The counter in use, written by hand with leading zeros ("007", when it
// was copied onto a new node, say), is read for its number too: the
// acquiring scripts compare it with the old counters as 7, and RaiseFence
// raises it to 8. RaiseFence compared "007" with "8" by length first and
// never raised it, so every grant drew token 8 again (3 grants through
// redlock, 3 servers: tokens 8, 8, 8).
func TestScriptsReadCounterInUseAsNumber(t *testing.T) {
	do := serverDo(t, redistest.NewServer(t))
	for _, tc := range []struct {
		old  string // the shared counter of earlier versions; "" for none
		want string
	}{{"", "7"}, {"6", "7"}, {"8", "8"}, {"10", "10"}} {
		for name, script := range map[string]driver.Script{"setnx_fence": driver.SetNXFenceScript(), "setnx_again": driver.SetNXAgainScript()} {
			key := fmt.Sprintf("p:inuse:%s:%q", name, tc.old)
			fk := driver.PrefixFenceKey("p:", key)
			do("SET", fk, "007")
			if tc.old != "" {
				do("SET", driver.FenceKey(key), tc.old)
			}
			args := []string{"EVAL", script.Source(), "2", key, fk, "value", "60000"}
			r := do(append(args, driver.OldFenceKeys(key, fk)...)...)
			if a, ok := r.([]any); !ok || len(a) != 2 || a[0] != int64(1) || a[1] != tc.want {
				t.Errorf("%s with the counter in use at \"007\" and an old one holding %q = %v, want [1 %s]", name, tc.old, r, tc.want)
			}
		}
	}
	for _, tc := range []struct {
		token, want string
	}{{"8", "8"}, {"6", "007"}, {"7", "007"}} {
		key := "p:raise:" + tc.token
		fk := driver.PrefixFenceKey("p:", key)
		do("SET", key, "value")
		do("SET", fk, "007")
		if r := do("EVAL", driver.RaiseFenceScript().Source(), "2", key, fk, "value", tc.token); r != int64(1) {
			t.Fatalf("RaiseFence of the holder = %v, want 1", r)
		}
		if got := do("GET", fk); got != tc.want {
			t.Errorf("RaiseFence(%s) of a counter at \"007\" left %q, want %q", tc.token, got, tc.want)
		}
	}
}

// serverDo returns a function that sends a command to srv and returns its
// reply, failing the test on an error, which names the command's words (a
// script's source as "<script>").
func serverDo(t *testing.T, srv *redistest.Server) func(args ...string) any {
	return func(args ...string) any {
		t.Helper()
		r, err := srv.Do(t.Context(), args...)
		if err != nil {
			shown := slices.Clone(args)
			for i, a := range shown {
				if strings.Contains(a, "\n") {
					shown[i] = "<script>"
				}
			}
			t.Fatalf("%q: %v", shown, err)
		}
		return r
	}
}
