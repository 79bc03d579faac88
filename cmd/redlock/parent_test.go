//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// startHoldInShell starts hold with args in the background of a shell,
// as a script does, and returns the shell, hold's PID, and the file that
// gets hold's stderr, once hold printed its line (it holds the lock), or,
// with waits, once it said (-v) that it waits for the lock. The test kills
// hold at its end if it still runs.
func startHoldInShell(t *testing.T, waits bool, args ...string) (sh *exec.Cmd, pid int, stderr string) {
	t.Helper()
	stderr = filepath.Join(t.TempDir(), "stderr")
	// $0 is the binary, $1 the stderr file, the rest hold's arguments.
	script := `f=$1; shift; "$0" hold "$@" 2>"$f" & echo "$!"; wait`
	sh = exec.Command("sh", append([]string{"-c", script, binary, stderr}, args...)...)
	sh.Env = command(t.Context()).Env
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				b, _ := os.ReadFile(stderr)
				t.Fatalf("the shell's stdout ended; hold's stderr:\n%s", b)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no line from the shell within 30s")
		}
		return ""
	}
	pid, err = strconv.Atoi(next())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if waits {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(stderr); strings.Contains(string(b), "redlock: waiting for ") {
				return sh, pid, stderr
			}
			if time.Now().After(deadline) {
				t.Fatal("hold does not say within 30s that it waits for the lock")
			}
		}
	}
	if l := next(); !strings.HasPrefix(l, `{"key":`) {
		t.Fatalf("hold printed %q, not its line", l)
	}
	return sh, pid, stderr
}

// held reports whether key is on a quorum of the servers.
func held(t *testing.T, servers []*redistest.Server, key string) bool {
	t.Helper()
	return holders(t, servers, key) > len(servers)/2
}

// holders counts the servers on which key exists.
func holders(t *testing.T, servers []*redistest.Server, key string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		v, err := s.Do(t.Context(), "EXISTS", key)
		if err != nil {
			t.Fatal(err)
		}
		if v == int64(1) {
			n++
		}
	}
	return n
}

// TestHoldReleasesWhenParentKilled starts hold in the background of a
// shell, as a script does, and kills the shell with SIGKILL, which no trap
// sees: hold, given to init, extended the lock for ever. It notices its
// parent's end now, releases the lock and exits, saying why. With
// --outlive-parent it keeps the lock, as before: it is still extending it
// once the other hold, whose shell was killed at the same time, has
// released its own. The bounds are generous, for a busy machine: on Linux
// hold learns of its parent's end at once (a pidfd), elsewhere within a
// second.
func TestHoldReleasesWhenParentKilled(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	args := []string{"--nodes", addrs, "--ttl", "3s"} // extended every second
	sh, pid, stderr := startHoldInShell(t, false, append(args, "orphaned")...)
	keepSh, keepPid, _ := startHoldInShell(t, false, append(args, "--outlive-parent", "detached")...)
	for _, s := range []*exec.Cmd{sh, keepSh} {
		if err := s.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		s.Wait()
	}
	for deadline := time.Now().Add(20 * time.Second); held(t, servers, "orphaned"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(stderr)
			t.Fatalf("hold still holds the lock 20s after its parent shell was killed; stderr:\n%s", b)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("hold still runs 10s after it released the lock")
		}
	}
	b, err := os.ReadFile(stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "redlock: hold: the process that started it (PID " + strconv.Itoa(sh.Process.Pid) + ") ended: releasing orphaned"; !strings.Contains(string(b), want) {
		t.Errorf("hold's stderr does not say %q:\n%s", want, b)
	}

	// The detached one extends its lock after that: it did not release it.
	before, err := servers[0].Do(t.Context(), "PTTL", "detached")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		now, err := servers[0].Do(t.Context(), "PTTL", "detached")
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := now.(int64); !ok || p <= 0 {
			t.Fatalf("hold --outlive-parent no longer holds the lock after its parent was killed (PTTL %v)", now)
		}
		if now.(int64) > before.(int64) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hold --outlive-parent did not extend its lock within 20s")
		}
	}
	if err := syscall.Kill(keepPid, 0); err != nil {
		t.Errorf("hold --outlive-parent exited after its parent was killed: %v", err)
	}
}

// TestHoldStopsWaitingWhenParentKilled: a hold that waits for a lock held
// elsewhere when its parent shell is killed stops waiting and exits, saying
// so, rather than take the lock later and hold it for ever.
func TestHoldStopsWaitingWhenParentKilled(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "busy")
	defer holder.term()
	sh, pid, stderr := startHoldInShell(t, true, "-v", "--nodes", addrs, "busy")
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sh.Wait()
	for deadline := time.Now().Add(20 * time.Second); !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(stderr)
			t.Fatalf("hold still waits 20s after its parent shell was killed; stderr:\n%s", b)
		}
	}
	b, err := os.ReadFile(stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := `redlock: hold: the process that started it (PID ` + strconv.Itoa(sh.Process.Pid) + `) ended while waiting for the lock "busy"; it was not held`; !strings.Contains(string(b), want) {
		t.Errorf("hold's stderr does not say %q:\n%s", want, b)
	}
	if !held(t, servers, "busy") {
		t.Error("the first holder's lock is gone")
	}
}

// pollParent, the watch where there are no pidfds, calls ended once the
// parent's PID is not the one it was given (the parent ended: the process
// was given to another), and nothing when its watch ends first.
func TestPollParent(t *testing.T) {
	old := parentPoll
	parentPoll = time.Millisecond
	defer func() { parentPoll = old }()
	var got []parentEnded
	quit := make(chan struct{})
	pollParent(os.Getppid()+1, quit, func(p parentEnded) { got = append(got, p) }) // another parent: "ended"
	if len(got) != 1 || got[0].pid != os.Getppid()+1 {
		t.Fatalf("pollParent of a parent that is not ours: ended %v, want once", got)
	}
	got = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollParent(os.Getppid(), quit, func(p parentEnded) { got = append(got, p) })
	}()
	time.Sleep(10 * parentPoll) // a few polls of a parent that lives
	close(quit)
	<-done
	if len(got) != 0 {
		t.Fatalf("pollParent of a parent that lives: ended %v", got)
	}
}
