//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// Two addresses of one Redis Cluster whose first seed answers for both, but
// which are not the same address: they differ in the password alone (both
// shown as redis://locker:xxxxx@SEED?cluster=true), or in their seeds
// (redis://SEED?cluster=true and redis://SEED?cluster=true&addr=SEED2).
// doctor fails the duplicates check and says that they reach the same
// server, at SEED, as for two addresses of one server
// (TestDoctorSameHostPortOtherPassword), not that they are the same
// address: a cluster's report kept no address to compare, so any two that
// shared the seed that answered were "the same address".
func TestDoctorSameSeedOtherClusterAddress(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, s := range c.Servers() {
		if _, err := s.Do(ctx, "ACL", "SETUSER", "locker", "on", ">pw1", ">pw2", "~*", "&*", "+@all"); err != nil {
			t.Fatal(err)
		}
	}
	seeds := c.Seeds()
	for _, tc := range []struct{ name, a, b string }{
		{"another password", strings.Replace(c.URL(), "redis://", "redis://locker:pw1@", 1), strings.Replace(c.URL(), "redis://", "redis://locker:pw2@", 1)},
		{"other seeds", "redis://" + seeds[0] + "?cluster=true", "redis://" + seeds[0] + "?cluster=true&addr=" + seeds[1]},
	} {
		rep, r := doctorJSON(t, tc.a+","+tc.b)
		ch, ok := findCheck(rep.Checks, "duplicates", statusFail)
		if !ok || r.code != exitFailure {
			t.Fatalf("%s: want a failed duplicates check and exit %d, got exit %d: %+v", tc.name, exitFailure, r.code, rep.Checks)
		}
		if strings.Contains(ch.Message, "same address") || !strings.Contains(ch.Message, "same server, at "+seeds[0]) {
			t.Errorf("%s: want the duplicates check to say they reach the same server at %s, not the same address, got %q", tc.name, seeds[0], ch.Message)
		}
		if strings.Contains(r.stdout+r.stderr, "pw1") || strings.Contains(r.stdout+r.stderr, "pw2") {
			t.Errorf("%s: doctor shows a password:\n%v", tc.name, r)
		}
	}
}
