//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestStatusRefusedExitsOne: status exits 1, as run and hold do, when too
// many nodes for a quorum answer an error that retrying cannot fix (a wrong
// password, none given), not 69, which a script takes for "try again
// later" and would retry for ever; nodes that do not answer still give 69,
// and one node that refuses among answering ones changes nothing.
func TestStatusRefusedExitsOne(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3, redistest.WithPassword("right-Pa55"))
	addr := func(s *redistest.Server, pw string) string {
		if pw == "" {
			return "redis://" + s.Addr()
		}
		return "redis://:" + pw + "@" + s.Addr()
	}
	list := func(pws ...string) string {
		a := make([]string, len(servers))
		for i, s := range servers {
			a[i] = addr(s, pws[i])
		}
		return strings.Join(a, ",")
	}
	down := redistest.DownAddrs(t, 3)
	for _, tc := range []struct {
		name  string
		nodes string
		code  int
		says  string
	}{
		{"wrong password on every node", list("wrong", "wrong", "wrong"), exitFailure, "retrying cannot fix (WRONGPASS)"},
		{"no password on two of three", list("", "", "right-Pa55"), exitFailure, "retrying cannot fix (NOAUTH)"},
		// Each node's code, not the last one's as every node's.
		{"a wrong password and none", list("wrong", "", "right-Pa55"), exitFailure, "retrying cannot fix (WRONGPASS or NOAUTH)"},
		{"wrong password on one of three", list("wrong", "right-Pa55", "right-Pa55"), 0, ""},
		{"nodes down", strings.Join(down, ","), exitUnavailable, "fewer than a quorum (2) of the 3 nodes answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, "", "status", "--timeout", "2s", "--nodes", tc.nodes, "k")
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) || strings.Contains(r.stdout+r.stderr, "right-Pa55") {
				t.Fatalf("status: want exit %d and %q, got %v", tc.code, tc.says, r)
			}
		})
	}
}
