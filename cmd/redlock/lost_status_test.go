//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunLostSaysCommandStatus: the line of run's exit 76 tells what became
// of CMD, its exit status 0 included. It said "(the command's exit status
// was N)" for a status other than 0, and nothing for 0: a CMD that ended
// well, before the release found the lock gone (or after SIGTERM, which it
// caught), read the same as one that never ran.
func TestRunLostSaysCommandStatus(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	dir := t.TempDir()
	for _, c := range []struct {
		name, script string
		// atRelease: the key is deleted while CMD waits for a file,
		// which is made then; it exits before the first extension
		// (TTL/3 = 10s) and the release finds the lock gone.
		atRelease bool
		want      string
	}{
		{"caught TERM", `trap 'exit 0' TERM; echo held; while :; do sleep 0.05; done`, false, "(sh exited with status 0)\n"},
		{"ended well", `echo held; while [ ! -e "$F" ]; do sleep 0.05; done; exit 0`, true, `(sh exited with status 0): the release found it gone`},
		{"ended with 3", `echo held; while [ ! -e "$F" ]; do sleep 0.05; done; exit 3`, true, `(sh exited with status 3): the release found it gone`},
	} {
		key := strings.ReplaceAll(c.name, " ", "-")
		file := filepath.Join(dir, key)
		ttl := "1500ms"
		if c.atRelease {
			ttl = "30s"
		}
		b := startEnv(t, []string{"F=" + file}, "run", "--nodes", addrs, "--ttl", ttl, key, "--", "sh", "-c", c.script)
		b.waitLine("held", 30*time.Second)
		deleteEverywhere(t, servers, key)
		if c.atRelease {
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if code := b.wait(30 * time.Second); code != exitLockLost {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", c.name, code, exitLockLost, b.stderr.String())
			continue
		}
		want := `redlock: run: the lock "` + key + `" was lost ` + c.want
		if !strings.Contains(b.stderr.String(), want) {
			t.Errorf("%s: stderr does not say %q:\n%s", c.name, want, b.stderr.String())
		}
	}
}
