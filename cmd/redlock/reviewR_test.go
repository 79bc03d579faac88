//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TestDemoTooManyNodes: demo --nodes past redlock.MaxNodes is a usage error
// before any node starts. It started them all (65 redis-server processes
// without --memory), then every part failed with "65 nodes are more than
// 64" and the demo exited with 1.
func TestDemoTooManyNodes(t *testing.T) {
	t.Parallel()
	n := fmt.Sprint(redlock.MaxNodes + 1)
	for _, args := range [][]string{
		{"demo", "--memory", "--nodes", n},
		{"demo", "--nodes", n, "--duration", "100ms"},
	} {
		r := invoke(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "at most 64") || r.stdout != "" {
			t.Errorf("redlock %q: want exit 2, \"at most 64\" on stderr and no node started (nothing on stdout), got %v", args, r)
		}
	}
}

// TestQuietWarningsDocumented: the lines that run and hold print without -v
// (lockEvents.warn: a node the lock goes on without, for a reason retrying
// cannot fix) are named where run's help and the README list what the
// command prints without -v. run's help said it printed "only" its errors,
// what it does to CMD's processes and that it keeps waiting; the README left
// out the node that does not tell which server it is.
func TestQuietWarningsDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	help := invoke(t, "", "run", "--help")
	if help.code != 0 {
		t.Fatalf("run --help: %v", help)
	}
	// Each warn of events.go, by words of its own line.
	warnings := []string{"refuses every lock", "no longer hold", "to the extension", "which server it is"}
	for name, text := range map[string]string{"run --help": help.stdout, "README.md": string(readme)} {
		text = strings.Join(strings.Fields(text), " ")
		_, quiet, ok := strings.Cut(text, "Without it, run prints only")
		if name == "README.md" {
			_, quiet, ok = strings.Cut(text, "Without it they print only")
		}
		if !ok {
			t.Errorf("%s does not say what is printed without -v", name)
			continue
		}
		quiet, _, _ = strings.Cut(quiet, "With or without")
		quiet, _, _ = strings.Cut(quiet, "Exit codes:")
		for _, w := range warnings {
			if !strings.Contains(quiet, w) {
				t.Errorf("%s: what is printed without -v does not name the warning %q:\n%s", name, w, quiet)
			}
		}
	}
}

// TestHoldFencingExampleEndsWhenHoldFails runs hold's second example, as its
// help prints it, under sh: when hold exits without its line (here a bad
// address, exit 2; as well the lock busy past --wait, or the nodes
// unreachable), the example must end rather than wait for held.json for
// ever, and not run its step; when hold holds the lock, the step gets the
// token. Before, its loop "until [ -s held.json ]" never ended once hold
// had exited without a line.
func TestHoldFencingExampleEndsWhenHoldFails(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq")
	}
	help := invoke(t, "", "help", "hold")
	_, example, ok := strings.Cut(help.stdout, "  # the same with a fencing token, read with jq\n")
	if !ok {
		t.Fatalf("hold's help has no example 'the same with a fencing token':\n%v", help)
	}
	example, _, _ = strings.Cut(example, "\n\n")
	script := strings.NewReplacer("redlock hold", binary+" hold", "import-invoices", "echo imported").
		Replace(strings.ReplaceAll("\n"+example, "\n  ", "\n")) + "\necho \"status $?\"\n"
	_, addrs := nodes(t, 3)
	for _, c := range []struct {
		nodes string
		code  int    // the example's exit status
		want  string // in its output
	}{
		{"127.0.0.1:0", 1, "malformed"}, // hold exits 2 at once: a bad address
		{addrs, 0, "imported --fence 1\nstatus 0"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Dir = t.TempDir() // held.json
		cmd.Env = append(os.Environ(), "REDLOCK_NODES="+c.nodes)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Errorf("REDLOCK_NODES=%s: the example did not end within 20s (%v):\n%s\nscript:\n%s", c.nodes, err, out, script)
			continue
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code || !strings.Contains(string(out), c.want) || (c.code != 0 && strings.Contains(string(out), "imported")) {
			t.Errorf("REDLOCK_NODES=%s: want exit %d, %q in the example's output, and its step only with the lock; got %v:\n%s\nscript:\n%s", c.nodes, c.code, c.want, err, out, script)
		}
	}
}
