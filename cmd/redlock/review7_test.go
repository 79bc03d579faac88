//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// A comma in the password of a redis:// URL splits --nodes there: the
// pieces are no addresses, and the messages about them must not print the
// password's head (the first piece has no '@' to redact up to). The comma
// written %2C works.
//
// So too for a password with an '@' before its ',': the first piece, a
// URL whose '@' is the password's, does not parse when what follows that
// '@' is no host:port ("p@hunter2/x" is a path, "p@hunter2:x" a port). Its
// message redacted up to that '@' and printed the rest of the password:
// `malformed redis address "redis://xxxxx@hunter2/x"`.
func TestNodesCommaInPassword(t *testing.T) {
	t.Parallel()
	const pw = "hunter2,x"
	nodeLists := []string{"redis://u:" + pw + "@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}
	for _, atPW := range []string{"p@hunter2/x,y", "p@hunter2:x,y", "p@hunter2?x,y", "p@hunter2#x,y", "p@hunter2%x,y", "p@hunter2:1/x,y"} {
		nodeLists = append(nodeLists, "127.0.0.1:2,redis://u:"+atPW+"@127.0.0.1:1,127.0.0.1:3")
	}
	for _, nodes := range nodeLists {
		for _, cmd := range [][]string{
			{"run", "--wait", "0", "k", "--", "true"},
			{"hold", "--wait", "0", "--for", "1ms", "k"},
			{"status", "k"},
			{"doctor"},
		} {
			args := append([]string{cmd[0], "--nodes", nodes}, cmd[1:]...)
			r := invoke(t, "", args...)
			if r.code != exitUsage || strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stderr, "%2C") {
				t.Errorf("redlock %s --nodes %q, a ',' in a password: want exit 2, a hint at %%2C and no password, got %v", cmd[0], nodes, r)
			}
		}
	}

	s := redistest.NewServer(t, redistest.WithPassword(pw))
	url := "redis://:" + strings.ReplaceAll(pw, ",", "%2C") + "@" + s.Addr()
	r := invoke(t, "", "run", "--nodes", url, "--wait", "0", "k", "--", "echo", "held")
	if r.code != 0 || r.stdout != "held\n" {
		t.Errorf("a password with its ',' written %%2C: want the lock held, got %v", r)
	}
}

// A stop sent to run is forwarded to CMD, which decides: run does not
// SIGKILL a CMD that outlives --grace after it, and --grace's help must not
// say it does (it did: "has to exit after SIGTERM, on a lost lock or a stop,
// before SIGKILL"); on a stop, --grace bounds only what CMD left behind.
func TestRunGraceOnStopIsForLeftovers(t *testing.T) {
	t.Parallel()
	r := invoke(t, "", "run", "--help")
	var grace string
	for line := range strings.SplitSeq(r.stdout, "\n") {
		if strings.Contains(line, "--grace duration") {
			grace = line
		}
	}
	if grace == "" || strings.Contains(grace, "or a stop") || !strings.Contains(grace, "left") {
		t.Errorf("run --help: want --grace to say that on a stop it bounds what CMD left, not CMD; got %q", grace)
	}

	_, addrs := nodes(t, 3)
	b := start(t, "run", "--nodes", addrs, "--grace", "100ms", "--key", "k", "--",
		"sh", "-c", "trap 'echo TERM' TERM; echo held; while :; do sleep 0.05; done")
	b.waitLine("held", 30*time.Second)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.waitLine("TERM", 30*time.Second)
	select {
	case <-b.done:
		t.Fatalf("run ended %v after forwarding SIGTERM to a CMD that ignores it: exit %d\n%s", time.Second, b.code, b.stderr.String())
	case <-time.After(time.Second):
	}
}

// A command found through "." (or an empty element) in PATH runs, as
// execvp(3), flock(1) and shells run it: os/exec's LookPath refuses it
// (exec.ErrDot), and run said 127, not found.
func TestRunCommandFoundThroughDotInPath(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myscript"), []byte("#!/bin/sh\necho \"ran $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".:" + os.Getenv("PATH"), os.Getenv("PATH") + ":"} {
		// --node-timeout 2s: a first attempt timed out on a loaded machine
		// prints a warning, which the exact output below does not allow.
		cmd := command(t.Context(), "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "10s", "k", "--", "myscript", "here")
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "ran here\n" {
			t.Errorf("PATH=%s, myscript in the current directory: want it run, got %v:\n%s", path, err, out)
		}
	}
}

// demo stopped by a signal exits as a shell reports it, 128 + its number,
// with a message that says so: it said "redlock: context canceled" and
// exited with 1, a failure of the demo.
func TestDemoInterrupted(t *testing.T) {
	t.Parallel()
	b := start(t, "demo", "--memory", "--duration", "20s")
	for !strings.Contains(b.nextLine(30*time.Second), "Contention") {
	}
	if err := b.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := b.wait(30 * time.Second)
	if code != exitSignalBase+int(syscall.SIGINT) || strings.Contains(b.stderr.String(), "context canceled") || !strings.Contains(b.stderr.String(), "interrupt") {
		t.Errorf("demo after SIGINT: want exit %d and the signal named, got exit %d:\n%s", exitSignalBase+int(syscall.SIGINT), code, b.stderr.String())
	}
}

// One of run's flags after KEY, without a "--" after it, is a usage error
// (exit 2: "run's flags go before KEY"), as it is with one: it was taken for
// CMD, and run said 127, "--wait": executable file not found.
func TestRunFlagAfterKeyWithoutDashes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"k", "--wait", "0", "true"},
		{"k", "--wait=0", "true"},
		{"k", "-v", "true"},
		{"k", "--help"},
	} {
		r := invoke(t, "", append([]string{"run", "--nodes", "127.0.0.1:1"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "after KEY") {
			t.Errorf("redlock run %s: want exit 2, flags go before KEY, got %v", strings.Join(args, " "), r)
		}
	}
	// A CMD that starts with '-' but is no flag of run is still CMD.
	r := invoke(t, "", "run", "--nodes", "127.0.0.1:1", "k", "-no-such-command")
	if r.code != exitNotFound {
		t.Errorf("redlock run k -no-such-command: want 127, got %v", r)
	}
}

// A REDLOCK_ value that parses but that the command refuses (a negative
// wait, a TTL of 0, an unknown driver, ...) is a usage error that names the
// variable, as README promises for every value the flag does not accept:
// the message named only the flag ("--wait -1s is negative"), which the
// user never gave.
func TestEnvironmentRefusedValueNamesVariable(t *testing.T) {
	t.Parallel()
	for _, bad := range []struct{ kv, cmd string }{
		{"REDLOCK_WAIT=-1s", "run"},
		{"REDLOCK_TTL=0s", "run"},
		{"REDLOCK_TTL=48h", "hold"},
		{"REDLOCK_NODE_TIMEOUT=30s", "run"},
		{"REDLOCK_DRIVER=nope", "hold"},
		{"REDLOCK_GRACE=-1s", "run"},
		{"REDLOCK_CONFLICT_EXIT_CODE=256", "run"},
		{"REDLOCK_FOR=-1s", "hold"},
		{"REDLOCK_TIMEOUT=-1s", "status"},
		{"REDLOCK_MAX_SKEW=-1s", "doctor"},
		{"REDLOCK_NODES=redis://u:hunter2@127.0.0.1:99999", "run"},
	} {
		args := argsFor(bad.cmd)
		env := []string{"REDLOCK_NODES=127.0.0.1:1", bad.kv}
		r := invokeEnv(t, env, "", args...)
		name, _, _ := strings.Cut(bad.kv, "=")
		if r.code != exitUsage || !strings.Contains(r.stderr, name) || strings.Contains(r.stderr, "hunter2") {
			t.Errorf("redlock %s with %s: want exit 2 and %s named on stderr, got %v", bad.cmd, bad.kv, name, r)
		}
	}
	// Given on the command line, the flag is named, not the variable.
	r := invokeEnv(t, []string{"REDLOCK_NODES=127.0.0.1:1"}, "", "run", "--wait", "-1s", "k", "--", "true")
	if r.code != exitUsage || strings.Contains(r.stderr, "REDLOCK_") {
		t.Errorf("redlock run --wait -1s: want exit 2 and no variable named, got %v", r)
	}
}

// doctor's count check of an even set compares with the set one node
// smaller, in words that agree with its number: "than 1 node does" for two
// nodes (it said "than 1 nodes do"). An odd set's says how many failed nodes
// it tolerates, in words that agree too: "1 failed node" for three (it said
// "1 failed nodes").
func TestDoctorEvenCountWording(t *testing.T) {
	for n, want := range map[int]string{
		2: "2 nodes: an even count tolerates no more failures (0) than 1 node does; use an odd count",
		4: "4 nodes: an even count tolerates no more failures (1) than 3 nodes do; use an odd count",
		3: "3 nodes, quorum 2: tolerates 1 failed node",
		5: "5 nodes, quorum 3: tolerates 2 failed nodes",
	} {
		rep := &doctorReport{Quorum: n/2 + 1}
		for range n {
			rep.Nodes = append(rep.Nodes, &nodeReport{})
		}
		checkSet(rep, doctorOptions{})
		if rep.Checks[0].Name != "count" || rep.Checks[0].Message != want {
			t.Errorf("%d nodes: first check %s %q, want count %q", n, rep.Checks[0].Name, rep.Checks[0].Message, want)
		}
	}
}

// hold's line gives a key that is not UTF-8 quoted in key_quoted too, as
// status --json does: encoding/json writes its bad bytes as U+FFFD in key,
// so that "\xff" and "\xfe" came out the same.
func TestHoldLineKeyNotUTF8(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, key := range []string{"\xff", "plain"} {
		holder, h := startHold(t, "--nodes", addrs, "--for", "1ms", key)
		want := ""
		if key == "\xff" {
			want = `"\xff"`
		}
		if h.KeyQuoted != want {
			t.Errorf("hold %q: key_quoted %q, want %q", key, h.KeyQuoted, want)
		}
		if code := holder.wait(30 * time.Second); code != 0 {
			t.Fatalf("hold --for 1ms %q: exit %d, want 0; stderr:\n%s", key, code, holder.stderr.String())
		}
	}
}
