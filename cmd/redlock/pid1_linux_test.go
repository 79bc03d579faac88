package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unshareInit returns the command that runs argv as the first process (PID
// 1) of a new PID namespace, as a container's entrypoint runs, skipping the
// test where unshare(1) is missing or may not make one (not root), or where
// initOf cannot find that process.
func unshareInit(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	// Any error skips: EPERM without CAP_SYS_ADMIN (a container, not
	// root), a /proc that may not be mounted again, an unshare(1) that
	// lacks a flag.
	flags := []string{"--pid", "--fork", "--mount-proc", "--kill-child"}
	if out, err := exec.Command(unshare, append(flags, "true")...).CombinedOutput(); err != nil {
		t.Skipf("unshare %s: %v %s", strings.Join(flags, " "), err, out)
	}
	if _, err := os.Stat("/proc/thread-self/children"); err != nil { // initOf reads it
		t.Skipf("no /proc/PID/task/TID/children (a kernel without CONFIG_PROC_CHILDREN): %v", err)
	}
	c := command(context.Background(), append(flags, argv...)...)
	c.Path, c.Args[0] = unshare, unshare
	return c
}

// initOf waits up to 30s for the first process of the PID namespace that
// unshare (pid) made, and returns its PID as this process sees it.
func initOf(t *testing.T, pid int) int {
	t.Helper()
	children := filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(pid), "children")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(children)
		if f := strings.Fields(string(b)); len(f) == 1 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("unshare (PID %d) started no process within 30s", pid)
	return 0
}

// As a container's first process (PID 1 of its PID namespace: docker run
// without --init, a Kubernetes pod), run and hold cannot end by a signal
// they send themselves: the kernel drops a signal left at its default action
// that reaches a namespace's init from inside it, and Go's runtime, whose
// handler got it, then exits with 2, the status of bad arguments. docker
// stop (SIGTERM to PID 1) made run exit with 2, where it exited with 143
// before it learnt to end by the signal, and where timeout(1) as PID 1
// (unshare --pid --fork timeout 10 sh -c 'kill -TERM $$') exits with 143
// too. Run and hold exit with 128 + N there, as the help says a shell shows.
func TestRunAsPID1ExitsWith128PlusN(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, tc := range []struct {
		name string
		args []string
		busy string // a key held elsewhere, which it waits for: the test sends SIGTERM to it
	}{
		// CMD dies of SIGTERM, which it sent itself.
		{"cmd", []string{"run", "--nodes", addrs, "pid1", "--", "sh", "-c", "kill -TERM $$"}, ""},
		// docker stop: SIGTERM to run, which forwards it to CMD.
		{"run", []string{"run", "--nodes", addrs, "pid1", "--", "sh", "-c", "kill -TERM 1; exec sleep 60"}, ""},
		// A busy key each: on a key of an earlier case, waitForWaiter
		// could find that case's waiter still subscribed (its server
		// not yet past the close of its connection) and the SIGTERM
		// come before this one caught it, which PID 1 drops, or which
		// makes Go's runtime exit with 2.
		{"run-waiting", []string{"run", "--nodes", addrs, "pid1-busy-run", "--", "true"}, "pid1-busy-run"},
		{"hold-waiting", []string{"hold", "--nodes", addrs, "pid1-busy-hold"}, "pid1-busy-hold"},
	} {
		if tc.busy != "" {
			holder := start(t, "run", "--nodes", addrs, "--key", tc.busy, "--", "sh", "-c", "echo held; exec sleep 120")
			holder.waitLine("held", 30*time.Second)
		}
		c := unshareInit(t, append([]string{binary}, tc.args...)...)
		var stderr syncBuffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		if tc.busy != "" {
			waitForWaiter(t, servers, tc.busy)
			if err := syscall.Kill(initOf(t, c.Process.Pid), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		sig := endedBy(t, c)
		if code := c.ProcessState.ExitCode(); sig != 0 || code != exitSignalBase+int(syscall.SIGTERM) {
			t.Errorf("%s: redlock %s as PID 1, ended by SIGTERM: %v, want exit status 143; stderr:\n%s", tc.name, strings.Join(tc.args, " "), c.ProcessState, stderr.String())
		}
		if tc.busy == "" {
			heldNowhere(t, servers, "pid1")
		}
	}
}
