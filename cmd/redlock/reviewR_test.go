//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
