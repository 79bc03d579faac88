//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// One server given twice under addresses that differ, by their database
// here (redis://A/0 and redis://A/1, two key spaces of one server, which a
// crash takes down together): doctor fails the duplicates check, and says
// that they reach the same server, not that they are the same address,
// which they are not.
func TestDoctorSameHostPortOtherDatabase(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	a, b := servers[0].Addr(), servers[1].Addr()
	addrs := strings.Join([]string{"redis://" + a + "/0", "redis://" + a + "/1", b}, ",")
	rep, r := doctorJSON(t, addrs)
	ch, ok := findCheck(rep.Checks, "duplicates", statusFail)
	if !ok || r.code != exitFailure {
		t.Fatalf("one server under two databases: want a failed duplicates check and exit %d, got exit %d: %+v", exitFailure, r.code, rep.Checks)
	}
	if strings.Contains(ch.Message, "same address") || !strings.Contains(ch.Message, "same server") || !strings.Contains(ch.Message, a) {
		t.Errorf("one server under two databases: want the duplicates check to say they reach the same server at %s, not the same address, got %q", a, ch.Message)
	}
}
