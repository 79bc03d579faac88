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
	// --node-timeout 2s: with the default 200ms, a loaded machine's first
	// connections timed out (exit 69, "connect: still connecting"), which is
	// not what this test is about.
	r = invokeEnv(t, env, "", "run", "--node-timeout", "2s", "--wait", "0", t.Name(), "--", "sh", "-c", `printf '%s' "$`+nodesEnv+`"`)
	if r.code != 0 || !strings.Contains(r.stdout, password) {
		t.Errorf("run with the nodes in %s: want exit 0 and CMD seeing the variable, as the help says: %v", nodesEnv, r)
	}
	r = invokeEnv(t, env, "", "run", "--node-timeout", "2s", "--wait", "0", t.Name(), "--", "env", "-u", nodesEnv, "sh", "-c", `printf '%s' "${`+nodesEnv+`-unset}"`)
	if r.code != 0 || r.stdout != "unset" {
		t.Errorf("run ... -- env -u %s CMD: want exit 0 and CMD without the variable: %v", nodesEnv, r)
	}
}

// TestNodesCommaInPasswordWithoutURL: credentials without redis:// ("user:
// pass,word@host:port"), refused since they need a URL, are split by a ','
// of the password as a URL's are (TestNodesCommaInPassword): the messages
// must not print the piece before the ',' either, which has no '@' to
// redact up to. They printed `malformed redis address "u:hunter2": port
// "hunter2" is not a number`.
func TestNodesCommaInPasswordWithoutURL(t *testing.T) {
	t.Parallel()
	for _, nodes := range []string{
		"u:hunter2,x@127.0.0.1:1",
		":hunter2,x@127.0.0.1:1",
		"u:hunter2,x,y@127.0.0.1:1",
		"127.0.0.1:2,u:hunter2,127.0.0.1:3,x@127.0.0.1:1",
		"127.0.0.1:2,u:hunter2,x@127.0.0.1:1,127.0.0.1:3",
	} {
		for _, cmd := range [][]string{
			{"run", "--wait", "0", "k", "--", "true"},
			{"hold", "--wait", "0", "--for", "1ms", "k"},
			{"status", "k"},
			{"doctor"},
		} {
			for _, env := range []bool{false, true} {
				args := append([]string{cmd[0], "--nodes", nodes}, cmd[1:]...)
				var vars []string
				if env {
					args = append([]string{cmd[0]}, cmd[1:]...)
					vars = []string{nodesEnv + "=" + nodes}
				}
				r := invokeEnv(t, vars, "", args...)
				if r.code != exitUsage || strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stderr, "redis://user:password@") {
					t.Errorf("redlock %s with --nodes %q (in the environment: %v): want exit 2, a hint at redis:// and no password, got %v", cmd[0], nodes, env, r)
				}
			}
		}
	}
	// Valid addresses before an item with '@' are no pieces of a password:
	// the error is that item's, redacted.
	r := invoke(t, "", "status", "--nodes", "127.0.0.1:2,u:hunter2@127.0.0.1:1", "k")
	if r.code != exitUsage || strings.Contains(r.stderr, "hunter2") || !strings.Contains(r.stderr, "address 2") {
		t.Errorf("status with a valid address before credentials without a URL: want exit 2 and the error of address 2, got %v", r)
	}
}
