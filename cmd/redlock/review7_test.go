//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// A comma in the password of a redis:// URL splits --nodes there: the
// pieces are no addresses, and the messages about them must not print the
// password's head (the first piece has no '@' to redact up to). The comma
// written %2C works.
func TestNodesCommaInPassword(t *testing.T) {
	t.Parallel()
	const pw = "hunter2,x"
	for _, cmd := range [][]string{
		{"run", "--wait", "0", "k", "--", "true"},
		{"hold", "--wait", "0", "--for", "1ms", "k"},
		{"status", "k"},
		{"doctor"},
	} {
		nodes := "redis://u:" + pw + "@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
		args := append([]string{cmd[0], "--nodes", nodes}, cmd[1:]...)
		r := invoke(t, "", args...)
		if r.code != exitUsage || strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stderr, "%2C") {
			t.Errorf("redlock %s with a ',' in a password: want exit 2, a hint at %%2C and no password, got %v", cmd[0], r)
		}
	}

	s := redistest.NewServer(t, redistest.WithPassword(pw))
	url := "redis://:" + strings.ReplaceAll(pw, ",", "%2C") + "@" + s.Addr()
	r := invoke(t, "", "run", "--nodes", url, "--wait", "0", "k", "--", "echo", "held")
	if r.code != 0 || r.stdout != "held\n" {
		t.Errorf("a password with its ',' written %%2C: want the lock held, got %v", r)
	}
}
