//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLossRuleText: run's and hold's help and the README state when a held
// lock is lost as the library decides it (see round.lost and
// round.permanentFailure): an extension finds the key gone from, or is
// refused for good by, more than N - quorum nodes, so that no quorum can
// hold or extend the lock. With an even N that is half the nodes (two of
// four, quorum 3), which is neither "a majority" nor "a quorum": run's help
// still said "gone from a majority of the nodes, or a majority refuses it",
// and the README's -v paragraph "the first extension that a quorum refused
// with an error retrying cannot fix", after hold's help and the README's
// other lines were corrected to "too many nodes for a quorum".
func TestLossRuleText(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"README.md": string(readme)}
	for _, cmd := range []string{"run", "hold"} {
		r := invoke(t, "", cmd, "--help")
		if r.code != 0 {
			t.Fatalf("%s --help: %v", cmd, r)
		}
		texts[cmd+" --help"] = r.stdout
	}
	wrong := []string{
		"gone from a majority",
		"a majority refuses it",
		"a quorum refuses it",
		"extension that a quorum refused",
	}
	for name, text := range texts {
		text = strings.Join(strings.Fields(text), " ")
		for _, w := range wrong {
			if strings.Contains(text, w) {
				t.Errorf("%s says a lock is lost when %q: half the nodes of an even number are enough (2 of 4, quorum 3)", name, w)
			}
		}
	}
	for _, cmd := range []string{"run --help", "hold --help"} {
		if text := strings.Join(strings.Fields(texts[cmd]), " "); !strings.Contains(text, "gone from too many of the nodes for a quorum") {
			t.Errorf("%s does not say when the lock is lost in terms of a quorum:\n%s", cmd, texts[cmd])
		}
	}
}
