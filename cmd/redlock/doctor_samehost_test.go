//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

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

// Two addresses of one server that differ in the password alone (an ACL
// user with two passwords) are not "the same address", which their masked
// forms, both redis://locker:xxxxx@host:port, made them look: they reach the
// same server, and doctor says so, as for another database (above).
func TestDoctorSameHostPortOtherPassword(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := servers[0].Do(ctx, "ACL", "SETUSER", "locker", "on", ">pw1", ">pw2", "~*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	a, b := servers[0].Addr(), servers[1].Addr()
	addrs := strings.Join([]string{"redis://locker:pw1@" + a, "redis://locker:pw2@" + a, b}, ",")
	rep, r := doctorJSON(t, addrs)
	ch, ok := findCheck(rep.Checks, "duplicates", statusFail)
	if !ok || r.code != exitFailure {
		t.Fatalf("one server under two passwords: want a failed duplicates check and exit %d, got exit %d: %+v", exitFailure, r.code, rep.Checks)
	}
	if strings.Contains(ch.Message, "same address") || !strings.Contains(ch.Message, "same server, at "+a) {
		t.Errorf("one server under two passwords: want the duplicates check to say they reach the same server at %s, not the same address, got %q", a, ch.Message)
	}
	if strings.Contains(r.stdout+r.stderr, "pw1") || strings.Contains(r.stdout+r.stderr, "pw2") {
		t.Errorf("doctor shows a password:\n%v", r)
	}
}
