//go:build unix

package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestDoctorHidesEchoedValue: a server whose redis.conf renamed SET away
// answers doctor's scratch lock with "ERR unknown command 'SET', with args
// beginning with: 'KEY' 'VALUE' 'NX' ...", the lock's value among the
// arguments; doctor printed the reply as it came, value included, in its
// text and --json reports. Lock values appear in no output (README,
// Secrets): the report names the refusal without the arguments.
func TestDoctorHidesEchoedValue(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3, redistest.WithConfig("rename-command", "SET", `""`))
	value := regexp.MustCompile(`(?:^|[^A-Z2-7])[A-Z2-7]{26}(?:$|[^A-Z2-7])`) // rand.Text's 26 characters
	for _, args := range [][]string{{"doctor", "--nodes", addrs}, {"doctor", "--json", "--nodes", addrs}} {
		r := invoke(t, "", args...)
		out := r.stdout + r.stderr
		if !strings.Contains(out, "unknown command") {
			t.Errorf("%v: the report does not name the refusal: %v", args, r)
		}
		if strings.Contains(out, "args beginning with") || value.MatchString(out) {
			t.Errorf("%v: the report shows the scratch lock's value: %v", args, r)
		}
	}
}
