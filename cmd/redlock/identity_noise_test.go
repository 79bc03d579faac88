//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestRunWrongPasswordSaysOnlyThat: with a wrong password, run fails at once
// with 1 and the WRONGPASS error. It also said, once a node and first, that
// each node "does not tell which server it is ... (give the user +info ...)",
// since the identity question fails with WRONGPASS too: advice that sends
// the operator after a permission while the password is wrong.
func TestRunWrongPasswordSaysOnlyThat(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3, redistest.WithPassword("right-Pa55"))
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = "redis://:wrong-Pa55@" + s.Addr()
	}
	for _, driver := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", driver, "--nodes", strings.Join(addrs, ","), "--wait", "10s", "k", "--", "true")
		if r.code != exitFailure || !strings.Contains(r.stderr, "WRONGPASS, which retrying cannot fix") || strings.Contains(r.stderr, "does not tell which server it is") {
			t.Errorf("%s: run with a wrong password: want exit 1 and the WRONGPASS error alone, got %v", driver, r)
		}
	}
}
