//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeCommand finds a redlock command in a line of a README code block: at
// the start of the line (after a "$ " prompt) or after "exec " (the hold
// recipe's coproc). Its flags and arguments end at " -- " (run's CMD), a
// pipe, a ";", a "&", a "}" or a "#" comment.
var readmeCommand = regexp.MustCompile(`(?:^(?:\$ )?|\bexec )redlock (run|hold|status|doctor|demo|completion)\b([^|;&}#]*)`)

// readmeCommands returns the redlock command lines of text's code blocks, as
// the subcommand and its arguments before CMD.
func readmeCommands(text string) [][]string {
	var cmds [][]string
	inBlock := false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		m := readmeCommand.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		args, _, _ := strings.Cut(m[2], " -- ")
		cmds = append(cmds, append([]string{m[1]}, strings.Fields(args)...))
	}
	return cmds
}

// TestREADMECommandLinesParse runs every redlock command line of the README's
// code blocks with --help first: cobra parses the line's flags before it
// shows the help, so that a flag the command does not have (or a value it
// does not take) fails the test, while nothing connects to the nodes the
// lines name. The hold recipe runs whole in
// TestHoldREADMERecipeReleasesOnScriptExit.
func TestREADMECommandLinesParse(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(string(readme))
	seen := map[string]bool{}
	for _, args := range cmds {
		seen[args[0]] = true
	}
	for _, sub := range []string{"run", "hold", "status", "doctor"} {
		if !seen[sub] {
			t.Errorf("found no line of redlock %s in README.md's code blocks (found %q)", sub, cmds)
		}
	}
	// The check itself: a flag that does not exist fails.
	bad := readmeCommands("```sh\nredlock run --no-such-flag 1 k -- true\n```\n")
	cmds = append(cmds, bad...)
	for i, args := range cmds {
		r := invoke(t, "", append([]string{args[0], "--help"}, args[1:]...)...)
		if i >= len(cmds)-len(bad) {
			if r.code != exitUsage {
				t.Errorf("redlock %s with --help: want exit %d for a flag that does not exist, got %v", strings.Join(args, " "), exitUsage, r)
			}
			continue
		}
		if r.code != 0 {
			t.Errorf("README.md's line redlock %s does not parse: %v", strings.Join(args, " "), r)
		}
	}
}
