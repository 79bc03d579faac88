//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// TestRunMutualExclusion runs three commands under one lock at once: each
// appends start and end markers to a file, and no two intervals may overlap.
func TestRunMutualExclusion(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	log := filepath.Join(t.TempDir(), "log")
	const runs = 3
	results := make([]result, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			results[i] = invoke(t, "", "run", "--nodes", addrs, "--key", "exclusive", "--wait", "50s", "--",
				"sh", "-c", `echo "start $1" >> "$2"; sleep 0.3; echo "end $1" >> "$2"`, "sh", strconv.Itoa(i), log)
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("run %d: %v", i, r)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2*runs {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), 2*runs, data)
	}
	for i := 0; i < len(lines); i += 2 {
		id, ok := strings.CutPrefix(lines[i], "start ")
		if !ok || lines[i+1] != "end "+id {
			t.Fatalf("intervals overlap: line %d is %q, then %q; want a start and its own end:\n%s", i+1, lines[i], lines[i+1], data)
		}
	}
}

// TestRunNotObtained holds the lock with one run and checks that others give
// up with 75, and that SIGTERM to the holder reaches its command.
func TestRunNotObtained(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	holder := start(t, "run", "--nodes", addrs, "--key", "busy", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)

	marker := filepath.Join(t.TempDir(), "ran")
	// A generous node timeout: on a loaded machine, a node slower than the
	// default 200ms counts as failed, and the verdict would be 69.
	r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "busy", "--wait", "0", "--", "touch", marker)
	if r.code != exitConflict || !strings.Contains(r.stderr, "not obtained") {
		t.Fatalf("--wait 0 while held: want exit 75, got %v", r)
	}
	if fileExists(marker) {
		t.Fatal("--wait 0 while held: the command ran")
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "busy", "--wait", "700ms", "--", "touch", marker)
	if r.code != exitConflict || r.took < 700*time.Millisecond {
		t.Fatalf("--wait 700ms while held: want exit 75 after at least 700ms, got %v", r)
	}
	if fileExists(marker) {
		t.Fatal("--wait 700ms while held: the command ran")
	}

	// SIGTERM to run is forwarded: sleep dies of it, and run exits as a
	// shell would report it.
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(30 * time.Second); code != exitSignalBase+int(syscall.SIGTERM) {
		t.Fatalf("holder after SIGTERM: exit %d, want %d; stderr:\n%s", code, exitSignalBase+int(syscall.SIGTERM), holder.stderr.String())
	}
	// And it released the lock.
	r = invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "busy", "--wait", "0", "--", "touch", marker)
	if r.code != 0 || !fileExists(marker) {
		t.Fatalf("--wait 0 after the holder ended: want the command run and exit 0, got %v", r)
	}
}

// TestRunSignalWhileWaiting interrupts a run that waits for the lock: its
// command never runs, and it exits with 128+SIGINT.
func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder := start(t, "run", "--nodes", addrs, "--key", "k", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)
	marker := filepath.Join(t.TempDir(), "ran")
	// A generous node timeout: see waitForWaiter.
	waiter := start(t, "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "k", "--", "touch", marker)
	waitForWaiter(t, servers, "k")
	if err := waiter.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := waiter.wait(30 * time.Second); code != exitSignalBase+int(syscall.SIGINT) {
		t.Fatalf("waiter after SIGINT: exit %d, want %d; stderr:\n%s", code, exitSignalBase+int(syscall.SIGINT), waiter.stderr.String())
	}
	if fileExists(marker) {
		t.Fatal("the interrupted waiter ran its command")
	}
}

// waitForWaiter waits until a client waits for the lock key: it has
// subscribed to the key's releases on some node. A waiter subscribes once,
// within its node timeout, and polls if no subscription was confirmed by
// then (Client.Lock): give it a generous --node-timeout. With the default
// 200ms, a fresh process's first pub/sub connection missed it on a loaded
// machine (12 of 16 runs of TestRunSignalWhileWaiting and TestHoldThenRun
// under a load average of 12 on two cores), and this waited in vain.
func waitForWaiter(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		for _, s := range servers {
			v, err := s.Do(ctx, "PUBSUB", "SHARDNUMSUB", driver.ReleaseChannel(key))
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := v.([]any); ok && len(a) == 2 && a[1] != int64(0) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no client subscribed to the releases of %q", key)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRunPassThrough checks that the command gets stdin, stdout and stderr,
// and that its exit status is run's.
func TestRunPassThrough(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	r := invoke(t, "hello, lock\n", "run", "--nodes", addrs, "--key", "k", "--", "cat")
	if r.code != 0 || r.stdout != "hello, lock\n" {
		t.Errorf("cat under the lock: want stdin on stdout and exit 0, got %v", r)
	}
	// Flags after the command belong to the command, with or without "--".
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "k", "sh", "-c", "echo oops >&2; exit 7")
	if r.code != 7 || !strings.Contains(r.stderr, "oops\n") {
		t.Errorf("sh -c 'exit 7': want exit 7 and the command's stderr, got %v", r)
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "k", "--", "sh", "-c", "kill -KILL $$")
	if want := exitSignalBase + int(syscall.SIGKILL); r.code != want {
		t.Errorf("a command killed by SIGKILL: want exit %d, got %v", want, r)
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "k", "--", "no-such-command-here")
	if r.code != exitNotFound {
		t.Errorf("a missing command: want exit %d, got %v", exitNotFound, r)
	}
	// A directory is found but cannot be executed: 126, as shells say.
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "k", "--", t.TempDir())
	if r.code != exitCannotExec {
		t.Errorf("a directory as the command: want exit %d, got %v", exitCannotExec, r)
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "k", "--", "sh", "-c", `echo "${REDLOCK_TOKEN-unset}"`)
	if r.code != 0 || r.stdout != "unset\n" {
		t.Errorf("without --fencing: want no REDLOCK_TOKEN, got %v", r)
	}
}

// TestRunFencingToken checks that --fencing gives the command a token that
// rises with every grant.
func TestRunFencingToken(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	var last uint64
	for i := range 3 {
		r := invoke(t, "", "run", "--nodes", addrs, "--key", "fenced", "--fencing", "--", "sh", "-c", `echo "$REDLOCK_TOKEN"`)
		if r.code != 0 {
			t.Fatalf("run %d with --fencing: %v", i+1, r)
		}
		tok, err := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64)
		if err != nil || tok <= last {
			t.Fatalf("run %d with --fencing: REDLOCK_TOKEN=%q, want a number above %d", i+1, strings.TrimSpace(r.stdout), last)
		}
		last = tok
	}
}

// deleteEverywhere deletes key on every server, as an eviction or a clock
// jump would, underneath its holder. At least a quorum must have held it.
func deleteEverywhere(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	deleted := 0
	for _, s := range servers {
		n, err := s.Do(ctx, "DEL", key)
		if err != nil {
			t.Fatal(err)
		}
		if n == int64(1) {
			deleted++
		}
	}
	if deleted < len(servers)/2+1 {
		t.Fatalf("DEL %s deleted the key on %d of %d nodes, fewer than a quorum", key, deleted, len(servers))
	}
}

// TestRunLockLost deletes the lock on every node while the command runs: the
// command gets SIGTERM, and run exits with 76.
func TestRunLockLost(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	// The shell waits for sleep in the background so that its trap runs at
	// once, and kills sleep so that nothing holds stdout open.
	script := `trap 'echo got TERM; kill $p; exit 0' TERM; sleep 60 & p=$!; echo held; wait $p`
	b := start(t, "run", "--nodes", addrs, "--key", "lost", "--ttl", "1500ms", "--", "sh", "-c", script)
	b.waitLine("held", 30*time.Second)
	deleteEverywhere(t, servers, "lost")
	// Extended every 500ms: the next extension finds the lock gone.
	b.waitLine("got TERM", 30*time.Second)
	if code := b.wait(30 * time.Second); code != exitLockLost {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitLockLost, b.stderr.String())
	}
	if !strings.Contains(b.stderr.String(), "lost the lock") {
		t.Errorf("stderr does not say the lock was lost:\n%s", b.stderr.String())
	}
}

// TestRunLockLostKill is TestRunLockLost with a command that ignores SIGTERM:
// it is killed after --grace.
func TestRunLockLostKill(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	b := start(t, "run", "--nodes", addrs, "--key", "lost", "--ttl", "1500ms", "--grace", "500ms", "--",
		"sh", "-c", `trap "" TERM; echo held; exec sleep 60`) // sleep inherits the ignored SIGTERM
	b.waitLine("held", 30*time.Second)
	lost := time.Now()
	deleteEverywhere(t, servers, "lost")
	if code := b.wait(30 * time.Second); code != exitLockLost {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitLockLost, b.stderr.String())
	}
	if took := time.Since(lost); took < 500*time.Millisecond {
		t.Errorf("ended %v after the deletion, before the 500ms grace", took)
	}
	if !strings.Contains(b.stderr.String(), "SIGKILL") {
		t.Errorf("stderr does not mention SIGKILL:\n%s", b.stderr.String())
	}
}

// TestRunOutlivesTTL runs a command for over two TTLs: the lock is extended
// meanwhile, so another run cannot take it.
func TestRunOutlivesTTL(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	stop := filepath.Join(t.TempDir(), "stop")
	// A node timeout above the default 200ms (TTL/10): on a loaded machine
	// extensions slower than that fail, and two rounds of them lose the
	// 2s lock.
	b := start(t, "run", "--nodes", addrs, "--key", "long", "--ttl", "2s", "--node-timeout", "500ms", "--",
		"sh", "-c", `echo held; while [ ! -e "$1" ]; do sleep 0.05; done; echo done`, "sh", stop)
	b.waitLine("held", 30*time.Second)
	began := time.Now()
	for time.Since(began) < 5*time.Second { // two and a half TTLs
		time.Sleep(time.Second)
		r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "long", "--wait", "0", "--", "true")
		if r.code != exitConflict {
			t.Fatalf("another run %v after the first took the lock: want 75, got %v\nthe first's stderr:\n%s",
				time.Since(began).Round(time.Millisecond), r, b.stderr.String())
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitLine("done", 30*time.Second)
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, b.stderr.String())
	}
}

// TestRunNodesFromEnvironment takes the nodes from REDLOCK_NODES.
func TestRunNodesFromEnvironment(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := command(ctx, "run", "--key", "env", "--", "echo", "ok")
	cmd.Env = append(cmd.Env, nodesEnv+"="+addrs)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("run with %s: %v, stdout %q, stderr %q", nodesEnv, err, out, stderr.String())
	}
	// On a loaded machine a first attempt can time out on nodes it is
	// still connecting to, and run warns that it waits: nothing else.
	if e := stderr.String(); e != "" && !strings.HasPrefix(e, "redlock: waiting for env (") {
		t.Errorf("run with %s: stderr %q", nodesEnv, e)
	}
}

func TestRunEveryDriver(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", d, "--nodes", addrs, "--key", "k", "--", "echo", d)
		if r.code != 0 || r.stdout != fmt.Sprintln(d) {
			t.Errorf("--driver %s: %v", d, r)
		}
	}
}
