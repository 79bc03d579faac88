//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// A bad argument of "redlock completion" is a usage error (exit 2), as
// "redlock nosuch" and "redlock help nosuch" are: cobra's own completion
// command shows its help with exit 0 for an unknown shell, and fails with
// exit 1 for an argument after the shell.
func TestCompletionUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"completion", "nosuch"}, `unknown shell "nosuch"`},
		{[]string{"completion", "bash", "extra"}, "takes no arguments"},
	} {
		r := invoke(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("redlock %s: want exit 2 and %q on stderr, got %v", strings.Join(tc.args, " "), tc.want, r)
		}
	}
}

// lockDriverNames are the drivers run and hold accept, as the registry
// has them: every one but memory.
func lockDriverNames(t *testing.T) []string {
	t.Helper()
	names := slices.DeleteFunc(redlock.Drivers(), func(n string) bool { return n == "memory" })
	for _, want := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the registry has no driver %s: %v", want, names)
		}
	}
	return names
}

// shellCompletion runs shell with args, with the binary on PATH as
// redlock, in a directory that holds a file (notADriver), and returns its
// stdout; HOME is a directory of its own. It skips the test when shell is
// not installed.
func shellCompletion(t *testing.T, shell string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("%s is not installed", shell)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := command(ctx)
	cmd.Path, cmd.Args = path, append([]string{shell}, args...)
	cmd.Dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cmd.Dir, notADriver), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir() // for what a shell keeps (fish: its variables, its history)
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CACHE_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v; stdout:\n%s\nstderr:\n%s", shell, err, out, stderr.String())
	}
	return string(out)
}

// notADriver is the file beside a shell's completion: offered, it shows
// that the shell completes file names.
const notADriver = "not-a-driver.txt"

// bashCompletionScript is where the bash-completion package keeps its
// functions, which the bash script of "redlock completion bash" calls, or
// "" if none is found.
func bashCompletionScript() string {
	for _, p := range []string{"/usr/share/bash-completion/bash_completion", "/usr/local/share/bash-completion/bash_completion", "/opt/homebrew/share/bash-completion/bash_completion", "/etc/bash_completion"} {
		if fileExists(p) {
			return p
		}
	}
	return ""
}

// TestCompletionDriver: the value of --driver (REDLOCK_DRIVER), in run
// and hold, completes to the registered drivers they accept, never to file
// names: in redlock's own completion (__complete, which every shell's
// script asks), and in bash, zsh and fish running the scripts the
// completion command writes, where installed; PowerShell's script is
// checked to ask __complete and to honour its "no files" directive.
func TestCompletionDriver(t *testing.T) {
	t.Parallel()
	want := lockDriverNames(t)
	for _, sub := range []string{"run", "hold"} {
		r := invoke(t, "", "__complete", sub, "--driver", "")
		if got := strings.Join(want, "\n") + "\n:4\n"; r.code != 0 || r.stdout != got {
			t.Errorf("redlock __complete %s --driver '': want the drivers and the directive 4 (no file names):\n%s\ngot:\n%v", sub, got, r)
		}
		r = invoke(t, "", "__complete", sub, "--driver", "r")
		if r.stdout != "redigo\nrueidis\n:4\n" {
			t.Errorf("redlock __complete %s --driver r: want redigo and rueidis, got:\n%v", sub, r)
		}
	}
	// Each shell prints one candidate a line.
	check := func(t *testing.T, what, out string) {
		t.Helper()
		var got []string
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			name, _, _ := strings.Cut(line, "\t") // fish: a description may follow
			got = append(got, strings.TrimPrefix(strings.TrimSpace(name), "--driver="))
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("%s: completes %q, want the drivers %q (a file name, or none in bash: the shell completes files)", what, got, want)
		}
	}
	t.Run("bash", func(t *testing.T) {
		lib := bashCompletionScript()
		if lib == "" {
			t.Skip("the bash-completion package is not installed")
		}
		// COMPREPLY empty: bash falls back to file names (complete -o default).
		for _, line := range []string{"redlock run --driver ", "redlock hold --driver "} {
			out := shellCompletion(t, "bash", "--norc", "--noprofile", "-c", `source "$1"; source <(redlock completion bash)
read -ra COMP_WORDS <<<"$2"; COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$2; COMP_POINT=${#COMP_LINE}
__start_redlock redlock "" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"`, "bash", lib, line)
			check(t, "bash: "+line+"<TAB>", out)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		// zsh's completion system runs inside its line editor; here its
		// functions that the script calls print what they are given:
		// _describe the candidates, _arguments the file completion.
		for _, line := range []string{"redlock run --driver ", "redlock hold --driver "} {
			out := shellCompletion(t, "zsh", "-f", "-c", `compdef() { :; }
_describe() { [[ $1 == -V ]] && shift; local -a c; c=("${(@P)2}"); (( ${#c} )) || return 1; print -rl -- "${c[@]}"; }
_arguments() { print -r -- "$@"; ls; }
source <(redlock completion zsh)
words=(${=1} ""); CURRENT=${#words}
_redlock`, "zsh", line)
			check(t, "zsh: "+line+"<TAB>", out)
		}
	})
	t.Run("fish", func(t *testing.T) {
		for _, line := range []string{"redlock run --driver ", "redlock hold --driver=", "redlock run --nodes a --driver "} {
			out := shellCompletion(t, "fish", "--no-config", "-c", `redlock completion fish | source; complete -C $argv[1]`, line)
			check(t, "fish: "+line+"<TAB>", out)
		}
	})
	t.Run("powershell", func(t *testing.T) {
		r := invoke(t, "", "completion", "powershell")
		for _, want := range []string{"__complete $Arguments", "$ShellCompDirectiveNoFileComp=4", "($Directive -band $ShellCompDirectiveNoFileComp) -ne 0"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("redlock completion powershell: the script does not contain %q: it may not ask redlock __complete for --driver's values, or offer files despite its directive:\n%s", want, r.stdout)
			}
		}
	})
}

// The README's row of "redlock completion" names the package that the bash
// script needs, as "redlock completion bash --help" does: without it, the
// script fails at the first TAB (_get_comp_words_by_ref: command not
// found).
func TestREADMECompletionNeedsBashCompletion(t *testing.T) {
	t.Parallel()
	r := invoke(t, "", "completion", "bash", "--help")
	m := regexp.MustCompile(`depends on the '([^']+)' package`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("redlock completion bash --help does not name the package its script depends on:\n%v", r)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.SplitSeq(string(readme), "\n") {
		if strings.HasPrefix(line, "| `redlock completion ") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("README.md has no row for redlock completion in the command's table")
	}
	if !strings.Contains(row, "`"+m[1]+"`") {
		t.Errorf("README.md's row of redlock completion does not say that bash needs the `%s` package, as its --help does:\n%s", m[1], row)
	}
}

// TestCompletionNumbersNoFiles: the value of a flag that takes a duration
// or a number completes to nothing, not to file names (the shells offered
// the directory's files for --wait, --ttl, --grace, ...), as --wait= too.
func TestCompletionNumbersNoFiles(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--wait", ""}, {"run", "--ttl", "1"}, {"run", "--grace", ""}, {"run", "--node-timeout", ""},
		{"run", "--conflict-exit-code", ""}, {"run", "--wait="},
		{"hold", "--wait", ""}, {"hold", "--ttl", ""}, {"hold", "--for", ""},
		{"status", "--timeout", ""}, {"doctor", "--ttl", ""}, {"doctor", "--max-skew", ""},
		{"demo", "--duration", ""}, {"demo", "--nodes", ""},
	} {
		r := invoke(t, "", append([]string{"__complete"}, args...)...)
		if r.code != 0 || r.stdout != ":4\n" {
			t.Errorf("redlock __complete %q: want nothing and the directive 4 (no file names), got:\n%v", args, r)
		}
	}
}

// TestCompletionStringsNoFiles: the value of a string flag that is not a
// file (--nodes, --prefix, --key) completes to nothing, not to file names
// (the shells offered the directory's files for them, as for the numbers
// before), as --nodes= too; --driver keeps its drivers (TestCompletionDriver),
// and CMD, after KEY or --key, still completes to file names (directive 0).
func TestCompletionStringsNoFiles(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--nodes", ""}, {"run", "--nodes="}, {"run", "--prefix", "a"}, {"run", "--key", ""},
		{"hold", "--nodes", ""}, {"hold", "--prefix", ""},
		{"status", "--nodes", ""}, {"status", "--prefix", ""},
		{"doctor", "--nodes", "127"}, {"doctor", "--key", ""},
	} {
		r := invoke(t, "", append([]string{"__complete"}, args...)...)
		if r.code != 0 || r.stdout != ":4\n" {
			t.Errorf("redlock __complete %q: want nothing and the directive 4 (no file names), got:\n%v", args, r)
		}
	}
	for _, args := range [][]string{{"run", "--key", "k", ""}, {"run", "--prefix", "p", "k", ""}} {
		r := invoke(t, "", append([]string{"__complete"}, args...)...)
		if r.code != 0 || r.stdout != ":0\n" {
			t.Errorf("redlock __complete %q: want CMD to complete as the shell does (directive 0: file names), got:\n%v", args, r)
		}
	}
}
