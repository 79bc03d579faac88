//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// doctor checks the permissions in the namespace that run and hold lock in:
// with --prefix, or REDLOCK_PREFIX as the README's examples export it, the
// key checked is the prefix and --key. It had no --prefix and ignored the
// variable, so under the README's least-privilege rule (~lock:* for
// --prefix lock:), where run takes its locks, doctor checked its default
// key "redlock:doctor" outside the namespace, failed the permissions on
// every node (NOPERM) and exited 1: unsafe nodes, it said, that lock fine.
func TestDoctorPrefix(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Prefix-Passw0rd"
	servers := redistest.NewServers(t, 3)
	// The README's rule for WithKeyPrefix("lock:"), as written there
	// (security/acl_test.go checks that every feature of the library
	// works under it): this test wrote it out by hand, and kept the rule
	// of before 14d5010 (~redlock:fence:* ~{lock:*, read and write) once
	// the README's became %R~redlock:fence:* %R~{lock:*.
	rule := readmeACLRule(t, password)
	addrs := make([]string, len(servers))
	for i, s := range servers {
		if _, err := s.Do(t.Context(), rule...); err != nil {
			t.Fatal(err)
		}
		addrs[i] = "redis://locker:" + password + "@" + s.Addr()
	}
	nodes := strings.Join(addrs, ",")
	if r := invokeEnv(t, []string{"REDLOCK_NODES=" + nodes}, "", "run", "--prefix", "lock:", "--fencing", "jobs", "--", "true"); r.code != 0 {
		t.Fatalf("run under the README's rule: want exit 0, got %v", r)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flag", nil, []string{"--prefix", "lock:"}},
		{"variable", []string{"REDLOCK_PREFIX=lock:"}, nil},
		{"flag and key", nil, []string{"--prefix", "lock:", "--key", "jobs:nightly"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := invokeEnv(t, append([]string{"REDLOCK_NODES=" + nodes}, c.env...), "", append([]string{"doctor", "--json"}, c.args...)...)
			var rep doctorReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("doctor --json printed no JSON report (%v):\n%v", err, r)
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Fatalf("doctor printed the password:\n%v", r)
			}
			if r.code != 0 || len(rep.Nodes) != len(servers) {
				t.Fatalf("doctor where run locks: want exit 0 and %d nodes, got %v", len(servers), r)
			}
			for _, n := range rep.Nodes {
				c, ok := findCheck(n.Checks, "permissions", statusOK)
				if !ok || !strings.Contains(c.Message, `"lock:`) {
					t.Errorf("node %s: want the permissions ok on a (scratch) key under lock:, which also took and released a lock there, got %+v", n.Addr, n.Checks)
				}
				if c, ok := findCheck(n.Checks, "permissions", statusWarn); ok {
					t.Errorf("node %s: the README's rule is all the library needs, but doctor warns: %+v", n.Addr, c)
				}
			}
		})
	}
	// status reads the key and its fencing counter as this user.
	if r := invokeEnv(t, []string{"REDLOCK_NODES=" + nodes}, "", "status", "--prefix", "lock:", "jobs"); r.code != 0 || strings.Contains(r.stdout, "NOPERM") {
		t.Errorf("status under the README's rule: want exit 0 and no NOPERM, got %v", r)
	}
	// Without the prefix, the same user fails where it may not lock.
	if r := invokeEnv(t, []string{"REDLOCK_NODES=" + nodes}, "", "doctor"); r.code != 1 || !strings.Contains(r.stdout, "NOPERM") {
		t.Errorf("doctor outside the user's namespace: want exit 1 naming NOPERM, got %v", r)
	}
}

// readmeACLRule returns the README's least-privilege rule, "ACL SETUSER
// locker ...", as the arguments of a command, with PASSWORD replaced by
// password.
func readmeACLRule(t *testing.T, password string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const head = "ACL SETUSER locker "
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, head) {
			if !strings.Contains(line, " >PASSWORD ") {
				t.Fatalf("the README's rule sets no password PASSWORD: %s", line)
			}
			return strings.Fields(strings.Replace(line, ">PASSWORD", ">"+password, 1))
		}
	}
	t.Fatalf("README.md has no line starting with %q", head)
	return nil
}
