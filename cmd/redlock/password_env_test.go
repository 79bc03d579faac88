//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestPasswordAdvice: a password given with --nodes shows in ps(1) to every
// user of the machine, so the help of redlock and of every command that
// takes --nodes says to give it in REDLOCK_NODES instead; and run's help
// says that CMD inherits that variable, password included, and how to keep
// it from CMD. What the help says is what happens: with the nodes (and their
// password) in REDLOCK_NODES alone, run takes the lock, CMD sees the
// variable, and env -u keeps it from CMD.
func TestPasswordAdvice(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "run", "hold", "status", "doctor"} {
		r := invoke(t, "", append(strings.Fields(sub), "--help")...)
		// Help text wraps: compare with its white space collapsed.
		help := strings.Join(strings.Fields(r.stdout), " ")
		if r.code != 0 || !strings.Contains(help, "password") || !strings.Contains(help, "ps(1)") || !strings.Contains(help, nodesEnv) {
			t.Errorf("redlock %s --help does not warn that a password in --nodes shows in ps(1), nor point to %s:\n%s", sub, nodesEnv, r.stdout)
		}
	}
	r := invoke(t, "", "run", "--help")
	if help := strings.Join(strings.Fields(r.stdout), " "); !strings.Contains(help, "env -u "+nodesEnv) {
		t.Errorf("redlock run --help does not say that CMD inherits %s, nor how to keep it from CMD:\n%s", nodesEnv, r.stdout)
	}

	const password = "env-Passw0rd-not-on-the-command-line"
	servers := redistest.NewServers(t, 3, redistest.WithPassword(password))
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL()
	}
	env := []string{nodesEnv + "=" + strings.Join(urls, ",")}
	r = invokeEnv(t, env, "", "run", "--wait", "0", t.Name(), "--", "sh", "-c", `printf '%s' "$`+nodesEnv+`"`)
	if r.code != 0 || !strings.Contains(r.stdout, password) {
		t.Errorf("run with the nodes in %s: want exit 0 and CMD seeing the variable, as the help says: %v", nodesEnv, r)
	}
	r = invokeEnv(t, env, "", "run", "--wait", "0", t.Name(), "--", "env", "-u", nodesEnv, "sh", "-c", `printf '%s' "${`+nodesEnv+`-unset}"`)
	if r.code != 0 || r.stdout != "unset" {
		t.Errorf("run ... -- env -u %s CMD: want exit 0 and CMD without the variable: %v", nodesEnv, r)
	}
}
