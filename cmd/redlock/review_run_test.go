//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// A --wait shorter than one attempt (a round trip to the nodes, the dials
// included) still makes that attempt, as --wait 0 does: on a free lock,
// run --wait 1ms runs CMD rather than exit with 75 and say the lock is held
// elsewhere. --wait bounds the wait after a refusal, not the first try.
func TestRunShortWaitMakesOneAttempt(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, cmd := range []string{"run", "hold"} {
		for _, wait := range []string{"1ns", "1ms"} {
			marker := filepath.Join(t.TempDir(), "ran")
			args := []string{cmd, "--nodes", addrs, "--node-timeout", "2s", "--wait", wait}
			if cmd == "run" {
				args = append(args, "free", "--", "touch", marker)
			} else {
				args = append(args, "--for", "1ms", "free")
			}
			r := invoke(t, "", args...)
			if r.code != 0 || cmd == "run" && !fileExists(marker) || cmd == "hold" && r.stdout == "" {
				t.Errorf("%s --wait %s on a free lock: want it held (exit 0), got %v", cmd, wait, r)
			}
		}
	}
}

// An extension that Do cancels because CMD exited while it was in flight
// (the library's error then matches context.Canceled), or that finds the
// lock released already, is no failure of the lock: -v does not say that
// extending failed and is retried while run is releasing the lock.
func TestVerboseExtensionCanceledAtRelease(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("redlock: Do released the lock while its extension was in flight: %w", context.Canceled),
		redlock.ErrAlreadyUnlocked,
	} {
		var stderr bytes.Buffer
		e := &lockEvents{verbose: true, stderr: &stderr}
		_, end := e.Extend(context.Background(), redlock.ExtendStart{Key: "k"})
		end(redlock.ExtendDone{Key: "k", Votes: redlock.Votes{Nodes: 3, Quorum: 2, Granted: 2}, Until: time.Now().Add(time.Second), Err: err})
		if stderr.Len() != 0 {
			t.Errorf("-v, an extension that ended with %q: want nothing said, got:\n%s", err, stderr.String())
		}
	}
}

// ignoring starts the binary with args through sh with SIGHUP and SIGINT
// ignored, as nohup(1) ignores SIGHUP and a shell ignores SIGINT in the
// commands it starts in the background.
func ignoring(args ...string) *exec.Cmd {
	cmd := command(context.Background(), "")
	cmd.Path, _ = exec.LookPath("sh")
	cmd.Args = append([]string{"sh", "-c", `trap '' HUP INT; exec "$0" "$@"`, binary}, args...)
	return cmd
}

// A signal ignored when run or hold starts (nohup redlock run ..., or a
// background job of a script) stays ignored, as flock(1) leaves it: CMD
// inherits it ignored, and hold is not stopped by it.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	// A generous node timeout: a slow first attempt would be told on stderr.
	run := ignoring("run", "--nodes", addrs, "--node-timeout", "2s", "--key", "k", "--", "sh", "-c", `kill -HUP $$; kill -INT $$; echo survived`)
	var runErr bytes.Buffer
	run.Stderr = &runErr
	out, err := run.Output()
	if err != nil || string(out) != "survived\n" {
		t.Errorf("run started with SIGHUP and SIGINT ignored: want CMD to inherit them ignored, got %v:\n%s\nstderr:\n%s", err, out, runErr.String())
	}

	hold := ignoring("hold", "--nodes", addrs, "--node-timeout", "2s", "held")
	stdout, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	hold.Stderr = &stderr
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if line == "" {
			done <- errors.New("no line")
			return
		}
		done <- nil
	}()
	defer hold.Process.Kill()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hold: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("hold printed no line within 30s; stderr:\n%s", stderr.String())
	}
	exited := make(chan error, 1)
	go func() { exited <- hold.Wait() }()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if err := hold.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("hold started with SIGHUP and SIGINT ignored ended on them (%v); stderr:\n%s", err, stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	if err := hold.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("hold after SIGTERM: %v, want exit 0; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hold still runs 30s after SIGTERM")
	}
}
