//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// execDefaultSignals is the test binary as a helper that executes argv with
// SIGINT and SIGHUP at their default actions, even when the test binary
// started with them ignored (a go test run in the background of a script):
// caught here, they are reset by the exec, as ignored ones are not.
func execDefaultSignals(argv []string) int {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGHUP)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 127
	}
	_ = syscall.Exec(path, argv, os.Environ())
	return 126
}

// script runs the bash script in a process group of its own, as a terminal
// runs a foreground job, with $RL the binary; the test then signals the
// group as Ctrl-C does. It returns the script and its stdout.
func script(t *testing.T, text string, env ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := command(context.Background(), "")
	c.Path, c.Args = self, []string{self, bash, "-c", text}
	c.Env = append(c.Env, append(env, helperEnv+"=exec-default-signals", "RL="+binary)...)
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
	return c, &out
}

// endedBy waits up to 30s for c and returns the signal that killed it, 0 if
// it exited.
func endedBy(t *testing.T, c *exec.Cmd) syscall.Signal {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%v still ran 30s after the signal", c.Args)
	}
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// waitFile waits up to 30s for the file p to exist.
func waitFile(t *testing.T, p string, out *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !fileExists(p); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s; output:\n%s", p, out.String())
		}
	}
}

// heldNowhere fails the test if a node still has key: run released it.
func heldNowhere(t *testing.T, servers []*redistest.Server, key string) {
	t.Helper()
	for _, s := range servers {
		if v, err := s.Do(t.Context(), "EXISTS", key); err != nil || v != int64(0) {
			t.Errorf("%s on %s: EXISTS %v, %v: want it released", key, s.Addr(), v, err)
		}
	}
}

// Ctrl-C stops a script at a run (or a waiting hold) that it interrupts,
// as it stops one at flock(1): bash, which waited for redlock and got
// SIGINT too, ends only if its command died of SIGINT (one that exited,
// with 130 or any status, is taken to have handled it, and the script goes
// on). So redlock, once it has released the lock, ends by SIGINT when a
// SIGINT ended its wait, or killed CMD: a shell reports 130 either way.
func TestRunCtrlCStopsScript(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		busy bool // another client holds the lock: run waits for it
		hold bool // hold waits for it, rather than run
	}{{"running", false, false}, {"waiting", true, false}, {"hold-waiting", true, true}} {
		key, ready := "ctrlc-"+tc.name, filepath.Join(dir, tc.name)
		cmd := `run --nodes "$NODES" --node-timeout 2s ` + key + ` -- sh -c 'touch "$READY"; exec sleep 60'`
		if tc.busy {
			holder := start(t, "run", "--nodes", addrs, "--key", key, "--", "sh", "-c", "echo held; exec sleep 60")
			holder.waitLine("held", 30*time.Second)
			// Never run: interrupted first.
			cmd = `run --nodes "$NODES" --node-timeout 2s ` + key + ` -- touch "$READY"`
			if tc.hold {
				cmd = `hold --nodes "$NODES" --node-timeout 2s ` + key + ` && touch "$READY"`
			}
		}
		c, out := script(t, `"$RL" `+cmd+`; echo "went on after redlock's $?"`, "NODES="+addrs, "READY="+ready)
		if tc.busy {
			waitForWaiter(t, servers, key)
		} else {
			waitFile(t, ready, out)
		}
		if err := syscall.Kill(-c.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if sig := endedBy(t, c); sig != syscall.SIGINT || strings.Contains(out.String(), "went on") {
			t.Errorf("%s: Ctrl-C in a script at redlock: want the script ended by SIGINT, as at flock(1); got %v, output:\n%s", tc.name, sig, out.String())
		}
		if tc.busy {
			if fileExists(ready) {
				t.Errorf("%s: the interrupted redlock took the lock", tc.name)
			}
		} else {
			heldNowhere(t, servers, key)
		}
	}
}

// systemctl stop (KillMode=mixed: SIGTERM to run alone, which forwards it)
// of a service run by run: CMD dies of SIGTERM, and so does run, once it
// has released the lock (so too for SIGHUP). systemd counts a main process that SIGTERM ended
// as a clean stop; one that exited with 143 as a failure, as it would not
// count CMD run by itself.
func TestRunEndsByCMDsSignal(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	dir := t.TempDir()
	for i, tc := range []struct {
		script string // CMD's, that touches $0 once it runs
		send   syscall.Signal
		sig    syscall.Signal // that ends run, or 0
		code   int            // run's exit code, without sig
	}{
		{`touch "$0"; exec sleep 60`, syscall.SIGTERM, syscall.SIGTERM, 0},
		{`touch "$0"; exec sleep 60`, syscall.SIGHUP, syscall.SIGHUP, 0},
		// A CMD that handles SIGTERM and exits with 143 itself is no
		// signal's death: run exits with 143.
		{`trap 'exit 143' TERM; touch "$0"; sleep 60 & wait`, syscall.SIGTERM, 0, 143},
		// SIGUSR1 would not end run (Go ignores it once not caught):
		// 128 + its number.
		{`touch "$0"; exec sleep 60`, syscall.SIGUSR1, 0, exitSignalBase + int(syscall.SIGUSR1)},
	} {
		ready := filepath.Join(dir, strconv.Itoa(i))
		c := command(context.Background(), "run", "--nodes", addrs, "--node-timeout", "2s", "svc", "--", "sh", "-c", tc.script, ready)
		var stderr syncBuffer
		c.Stderr = &stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
		waitFile(t, ready, &stderr)
		if err := c.Process.Signal(tc.send); err != nil {
			t.Fatal(err)
		}
		if sig := endedBy(t, c); sig != tc.sig || (sig == 0 && c.ProcessState.ExitCode() != tc.code) {
			t.Errorf("run of %q sent %v: want it ended by signal %d or else exit %d, got %v; stderr:\n%s", tc.script, tc.send, tc.sig, tc.code, c.ProcessState, stderr.String())
		}
		heldNowhere(t, servers, "svc")
	}
}
