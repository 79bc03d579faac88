package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cmdExited waits up to 30s until run says that CMD exited and it holds the
// lock for the processes CMD left: from then on, the signals sent to run go
// to those processes, not to CMD. (A sleep of 200-300ms stood for it: a
// margin a loaded machine can pass, a signal then reaching CMD.)
func (b *background) cmdExited() {
	b.t.Helper()
	const said = "exited; holding the lock"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.stderr.String(), said); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.t.Fatalf("run did not say %q within 30s; stderr:\n%s", said, b.stderr.String())
		}
	}
}

// processGone reports whether process pid has ended: it is gone, or a
// zombie nobody has reaped yet.
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// readPID reads the process ID a command wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var data []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			data = b
			break
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("no process ID in %s: %q", path, data)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// A process that CMD leaves behind (here, started in the background by a
// shell that exits at once) keeps the lock held until it exits, as it would
// keep a flock(1) lock: no other run gets the lock meanwhile, and run exits
// with CMD's status once it has ended.
func TestRunHoldsLockWhileLeftoversRun(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := start(t, "run", "--nodes", addrs, "--key", "leftover", "--", "sh", "-c",
		`sleep 2 >/dev/null 2>&1 & echo $! > "$1"; echo started; exit 4`, "sh", pidFile)
	b.waitLine("started", 30*time.Second)
	pid := readPID(t, pidFile)
	r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "leftover", "--wait", "0", "--", "true")
	if !processGone(pid) && r.code != exitConflict {
		t.Fatalf("another run while the leftover of CMD runs: want 75 (held), got %v", r)
	}
	if code := b.wait(30 * time.Second); code != 4 {
		t.Fatalf("exit %d, want CMD's 4; stderr:\n%s", code, b.stderr.String())
	}
	if !processGone(pid) {
		t.Fatal("run exited, and so released the lock, while the process CMD left still ran")
	}
	if !strings.Contains(b.stderr.String(), "until the processes it left have exited") {
		t.Errorf("stderr does not say why run waits:\n%s", b.stderr.String())
	}
	if r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "leftover", "--wait", "0", "--", "true"); r.code != 0 {
		t.Fatalf("run after the first released: %v", r)
	}
}

// When the lock is lost, every process CMD started gets SIGTERM, not only
// CMD: here the shell's child, which ignores nothing, and whose shell dies
// of the signal before it could pass it on.
func TestRunLockLostTerminatesCommandsChildren(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := start(t, "run", "--nodes", addrs, "--key", "lostkids", "--ttl", "1500ms", "--grace", "500ms", "--", "sh", "-c",
		`sleep 60 >/dev/null 2>&1 & echo $! > "$1"; echo held; wait`, "sh", pidFile)
	b.waitLine("held", 30*time.Second)
	pid := readPID(t, pidFile)
	deleteEverywhere(t, servers, "lostkids")
	if code := b.wait(30 * time.Second); code != exitLockLost {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitLockLost, b.stderr.String())
	}
	if !processGone(pid) {
		t.Fatal("the lock was lost and run exited, but the process CMD started still runs")
	}
}

// SIGTERM to run reaches CMD, and, once CMD has exited of it, the processes
// CMD left behind: run releases the lock only after they have ended, and
// exits as CMD did.
func TestRunStopReachesLeftovers(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := start(t, "run", "--nodes", addrs, "--key", "stopkids", "--grace", "2s", "--", "sh", "-c",
		`sleep 60 >/dev/null 2>&1 & echo $! > "$1"; echo held; wait`, "sh", pidFile)
	b.waitLine("held", 30*time.Second)
	pid := readPID(t, pidFile)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != exitSignalBase+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitSignalBase+int(syscall.SIGTERM), b.stderr.String())
	}
	if !processGone(pid) {
		t.Fatal("run was stopped and exited, but the process CMD left still runs")
	}
}

// zombiesOf counts the children of process ppid that have exited and wait to
// be reaped.
func zombiesOf(ppid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := bytes.Fields(b[i+1:])
		if len(f) > 1 && string(f[0]) == "Z" && string(f[1]) == strconv.Itoa(ppid) {
			n++
		}
	}
	return n
}

// The processes that CMD's processes orphan become run's (it is their
// subreaper): run reaps each as it exits, while CMD still runs, so that a
// long CMD that starts many leaves no zombies behind.
func TestRunReapsOrphansWhileCommandRuns(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	b := start(t, "run", "--nodes", addrs, "--key", "orphans", "--", "sh", "-c",
		`for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0 &); done; echo spawned; sleep 2`)
	b.waitLine("spawned", 30*time.Second)
	time.Sleep(300 * time.Millisecond) // the orphans' sleeps have exited
	// An orphan seen a zombie at one instant may have just exited, run
	// about to reap it (on a loaded machine): look again, for up to 1s
	// more, while CMD still runs (it sleeps 2s).
	n := zombiesOf(b.cmd.Process.Pid)
	for deadline := time.Now().Add(time.Second); n > 0 && time.Now().Before(deadline); n = zombiesOf(b.cmd.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	if n > 0 {
		t.Errorf("%d orphans of CMD are zombies of run while CMD runs", n)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr.String())
	}
}

// A process left behind that ignores SIGTERM and forks without pause is
// still ended at --grace when run is stopped: SIGKILL is sent again until
// nothing is left (a child forked while run walked the tree escaped a single
// one), and run then exits and releases.
func TestRunKillsForkingLeftovers(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	b := start(t, "run", "--nodes", addrs, "--key", "spawner", "--grace", "300ms", "--", "sh", "-c",
		`sh -c 'trap "" TERM; while :; do sleep 1000 >/dev/null 2>&1 & done' >/dev/null 2>&1 & echo started; exit 0`)
	b.waitLine("started", 30*time.Second)
	b.cmdExited() // the spawner forks meanwhile
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d, want CMD's 0; stderr:\n%s", code, b.stderr.String())
	}
	if r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--key", "spawner", "--wait", "0", "--", "true"); r.code != 0 {
		t.Fatalf("the lock after run ended: want it free, got %v", r)
	}
}

// A stop signal that comes after CMD exited sends SIGTERM to the processes
// it left (a shell's background job ignores SIGINT: SIGINT alone would not
// end it), before SIGKILL at --grace.
func TestRunStopAfterCommandExitedSendsSIGTERM(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	dir := t.TempDir()
	marker := filepath.Join(dir, "got-term")
	b := start(t, "run", "--nodes", addrs, "--key", "latestop", "--grace", "10s", "--", "sh", "-c",
		`sh -c 'trap "touch \"$1\"; exit 0" TERM; echo ready; while :; do sleep 0.05; done' sh "$1" & exit 0`, "sh", marker)
	b.waitLine("ready", 30*time.Second)
	b.cmdExited()
	if err := b.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d, want CMD's 0; stderr:\n%s", code, b.stderr.String())
	}
	if !fileExists(marker) {
		t.Fatalf("the process CMD left did not get SIGTERM; stderr:\n%s", b.stderr.String())
	}
}

// A signal that does not stop (SIGUSR1) sent to run after CMD exited goes to
// the processes run adopted, which decide for their own children, as CMD
// does while it runs: a child of theirs is not signalled.
func TestRunForwardsToAdoptedOnly(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	dir := t.TempDir()
	marker, pidFile := filepath.Join(dir, "got-usr1"), filepath.Join(dir, "pid")
	master := `trap 'touch "$1"' USR1; sleep 30 >/dev/null 2>&1 & echo $! > "$2"; echo ready; while :; do sleep 0.05; done`
	b := start(t, "run", "--nodes", addrs, "--key", "usr1", "--grace", "1s", "--", "sh", "-c",
		`sh -c "$1" sh "$2" "$3" & exit 0`, "sh", master, marker, pidFile)
	b.waitLine("ready", 30*time.Second)
	worker := readPID(t, pidFile)
	b.cmdExited()
	if err := b.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !fileExists(marker) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !fileExists(marker) {
		t.Fatal("the process run adopted did not get SIGUSR1")
	}
	if processGone(worker) {
		t.Fatal("SIGUSR1 reached the adopted process's own child, which it kills")
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr.String())
	}
}

// startSleeper starts a process that sleeps for a minute, and returns it as
// tree would list it, with the os/exec command that waits for it.
func startSleeper(t *testing.T) (*exec.Cmd, proc) {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	_, start, ok := procStat(c.Process.Pid)
	if !ok {
		t.Fatalf("no start time in /proc/%d/stat", c.Process.Pid)
	}
	return c, proc{pid: c.Process.Pid, start: start}
}

// killedBy waits for c and returns the signal that ended it.
func killedBy(t *testing.T, c *exec.Cmd) syscall.Signal {
	t.Helper()
	_ = c.Wait()
	ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("%v: not ended by a signal", c.ProcessState)
	}
	return ws.Signal()
}

// withoutPidfd makes signalProc take the path of a kernel without pidfds
// (before Linux 5.3) for the rest of the test.
func withoutPidfd(t *testing.T) {
	saved := pidfdOpen
	pidfdOpen = func(int, int) (int, error) { return -1, syscall.ENOSYS }
	t.Cleanup(func() { pidfdOpen = saved })
}

// A process ID that tree listed, whose process has exited since and whose
// ID is another process's now, shows another start time: that process is
// not signalled (kill(2) by ID would have reached it), with pidfds or
// without. Here the listing is made to disagree with the running process:
// the SIGKILL meant for the listed one must not reach it, the SIGTERM sent
// to it as it is listed then ends it.
func TestSignalProcSkipsReusedID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*testing.T)
	}{
		{"pidfd", func(*testing.T) {}},
		{"kill", withoutPidfd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			c, p := startSleeper(t)
			if how := signalProc(proc{pid: p.pid, start: p.start + 1}, syscall.SIGKILL); how != notSent {
				t.Fatalf("a process whose start time is not the one listed: signalProc = %d, want notSent (%d)", how, notSent)
			}
			if how := signalProc(p, syscall.SIGTERM); how != sentPidfd && how != sentKill {
				t.Fatalf("the process as listed: signalProc = %d, want it signalled", how)
			}
			if sig := killedBy(t, c); sig != syscall.SIGTERM {
				t.Fatalf("ended by %v, want SIGTERM: the signal meant for a process listed with another start time reached it", sig)
			}
		})
	}
}

// On a kernel with pidfds (as the one the tests run on, if pidfd_open
// works here), a process is signalled through a pidfd; without them, by
// kill(2).
func TestSignalProcPath(t *testing.T) {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skip("no pidfd_open here:", err)
	}
	syscall.Close(fd)
	c, p := startSleeper(t)
	if how := signalProc(p, syscall.SIGTERM); how != sentPidfd {
		t.Fatalf("signalProc = %d, want sentPidfd (%d)", how, sentPidfd)
	}
	if sig := killedBy(t, c); sig != syscall.SIGTERM {
		t.Fatalf("ended by %v, want SIGTERM", sig)
	}
	withoutPidfd(t)
	c, p = startSleeper(t)
	if how := signalProc(p, syscall.SIGTERM); how != sentKill {
		t.Fatalf("without pidfds: signalProc = %d, want sentKill (%d)", how, sentKill)
	}
	if sig := killedBy(t, c); sig != syscall.SIGTERM {
		t.Fatalf("without pidfds: ended by %v, want SIGTERM", sig)
	}
	// Reaped: gone, whichever the path.
	if how := signalProc(p, syscall.SIGTERM); how != notSent {
		t.Fatalf("a reaped process: signalProc = %d, want notSent", how)
	}
}

// tree lists run's children with their start times, which signalProc
// compares; the command's name in /proc/PID/stat may hold ")" and spaces.
func TestTreeListsStartTimes(t *testing.T) {
	_, p := startSleeper(t)
	if !slices.Contains(tree(true), p) {
		t.Fatalf("tree(true) = %v does not list the child %v", tree(true), p)
	}
	stat := []byte("42 (a) b (c) 1 2) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 100 0\n")
	if ppid, start, ok := parseStat(stat); !ok || ppid != 7 || start != 123456 {
		t.Fatalf("parseStat = %d, %d, %v; want 7, 123456, true", ppid, start, ok)
	}
	if _, _, ok := parseStat([]byte("42 (a) S 7 42")); ok {
		t.Fatal("parseStat of a short line: ok")
	}
}
