//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestSignalDuringConnect: a signal while run or hold connects (nodes that
// accept connections and never answer, a --node-timeout of ten minutes, so
// that Client.Connect is bounded by ten minutes) ends the command at once,
// with the signal's status, its command not run; not after the connect's
// bound.
func TestSignalDuringConnect(t *testing.T) {
	t.Parallel()
	silent := []*redistest.Silent{redistest.NewSilent(t), redistest.NewSilent(t), redistest.NewSilent(t)}
	addrs := make([]string, len(silent))
	for i, s := range silent {
		addrs[i] = s.Addr()
	}
	nodes := strings.Join(addrs, ",")
	for _, drv := range lockDrivers() {
		for _, args := range [][]string{
			{"run", "--driver", drv, "--nodes", nodes, "--ttl", "1h", "--node-timeout", "10m", "-v", "k", "--", "echo", "ran"},
			{"hold", "--driver", drv, "--nodes", nodes, "--ttl", "1h", "--node-timeout", "10m", "-v", "k"},
		} {
			accepted := 0
			for _, s := range silent {
				accepted += s.Accepted()
			}
			b := start(t, args...)
			// Connect asks: every node accepted a connection more.
			deadline := time.Now().Add(30 * time.Second)
			for {
				n := 0
				for _, s := range silent {
					n += s.Accepted()
				}
				if n >= accepted+len(silent) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%v: the nodes were not dialled; stderr:\n%s", args, b.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := b.wait(60 * time.Second); code != exitSignalBase+int(syscall.SIGTERM) {
				t.Errorf("%v after SIGTERM during the connect: exit %d, want %d; stderr:\n%s", args, code, exitSignalBase+int(syscall.SIGTERM), b.stderr.String())
			}
			for line := range b.lines {
				if line == "ran" {
					t.Errorf("%v: the command ran", args)
				}
			}
		}
	}
}
