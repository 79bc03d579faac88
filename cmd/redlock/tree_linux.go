package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// becomeSubreaper makes run the parent of the processes that CMD's
// processes leave behind when their own parents exit (a daemon, a command
// still running when the shell that started it was killed), in place of
// init: run can then see them, signal them and wait for them before it
// releases the lock. It reports whether the kernel allowed it.
func becomeSubreaper() bool {
	if _, ok := parentOf(os.Getpid()); !ok {
		return false // no /proc to find them in: run knows CMD alone
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	return errno == 0
}

// signalChildren sends sig to run's children: CMD, or, once CMD has exited,
// the processes run adopted from it.
func signalChildren(sig syscall.Signal) { signalProcs(tree(true), sig) }

// signalTree sends sig to every descendant of run (CMD and whatever it
// started), read from /proc: a process that starts meanwhile may be missed.
// It returns how many it signalled: those still running as listed.
func signalTree(sig syscall.Signal) int { return signalProcs(tree(false), sig) }

// A proc is a process as tree listed it: its ID, and its start time (clock
// ticks after boot), which tells it apart from a later process given the
// same ID once it has exited and been reaped (by its parent, or by reap).
type proc struct {
	pid   int
	start uint64
}

// How signalProc reached a process, or did not.
type sendPath int

const (
	notSent    sendPath = iota // gone, or its ID now another process's
	sentPidfd                  // pidfd_send_signal through a pidfd
	sentKill                   // kill(2), where there is no pidfd
	sendFailed                 // the kernel refused the signal
)

// pidfdOpen is unix.PidfdOpen; a test replaces it to take the path of a
// kernel without pidfds.
var pidfdOpen = unix.PidfdOpen

// signalProcs sends sig to each of procs that is still the process listed;
// it returns how many it signalled.
func signalProcs(procs []proc, sig syscall.Signal) int {
	n := 0
	for _, p := range procs {
		if how := signalProc(p, sig); how == sentPidfd || how == sentKill {
			n++
		}
	}
	return n
}

// signalProc sends sig to p, unless p has exited and its ID is another
// process's now (another of the user's, which kill(2) would reach). Where
// the kernel has pidfds (Linux 5.3), a pidfd is opened first and p's start
// time read after: a pidfd names one process for good, so once the start
// time matches, the signal reaches p or nothing. Elsewhere (an older kernel,
// a sandbox that forbids pidfd_open) the start time is checked just before
// kill(2): a process that exits and whose ID is taken again in between is
// the window left.
func signalProc(p proc, sig syscall.Signal) sendPath {
	fd, err := pidfdOpen(p.pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return notSent
	}
	if err == nil {
		defer syscall.Close(fd)
	}
	if _, start, ok := procStat(p.pid); !ok || start != p.start {
		return notSent
	}
	if err == nil {
		switch err := unix.PidfdSendSignal(fd, sig, nil, 0); {
		case errors.Is(err, syscall.ESRCH):
			return notSent
		case err != nil:
			return sendFailed
		}
		return sentPidfd
	}
	switch err := syscall.Kill(p.pid, sig); {
	case errors.Is(err, syscall.ESRCH):
		return notSent
	case err != nil:
		return sendFailed
	}
	return sentKill
}

// tree returns the descendants of run, or its children only.
func tree(childrenOnly bool) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]proc)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, start, ok := procStat(pid); ok {
			children[ppid] = append(children[ppid], proc{pid: pid, start: start})
		}
	}
	var out []proc
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			if !childrenOnly {
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// parentOf returns the parent of process pid.
func parentOf(pid int) (int, bool) {
	ppid, _, ok := procStat(pid)
	return ppid, ok
}

// procStat returns the parent and the start time of process pid, from
// /proc/pid/stat.
func procStat(pid int) (ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseStat(b)
}

// parseStat reads the parent and the start time from the text of a
// /proc/PID/stat, whose second field (the command's name, in parentheses)
// may hold any byte: the fields after it are state, ppid, ..., starttime
// (the 22nd field of the file, the 20th after the name).
func parseStat(b []byte) (ppid int, start uint64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return ppid, start, true
}

// hasChildren reports whether run has a child left: a process CMD left
// behind, given to run as their subreaper. It reaps those that have exited.
func hasChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil: // ECHILD: none
			return false
		case pid == 0: // some, none exited
			return true
		}
	}
}

// reap is the one reaper of run's children, CMD (pid) and the processes it
// left, which become run's as they are orphaned (see becomeSubreaper): each
// is reaped as it exits, so that none stays a zombie while CMD runs. It sends
// CMD's exit on exited, and closes gone once no child is left.
func reap(pid int, exited chan<- cmdExit, gone chan<- struct{}) {
	defer close(gone)
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: none left
			return
		}
		if p == pid {
			var sig syscall.Signal
			if ws.Signaled() {
				sig = ws.Signal()
			}
			exited <- cmdExit{status: waitStatusCode(ws), signal: sig, leftovers: hasChildren()}
		}
	}
}

// waitStatusCode is the exit status of a process as a shell reports it: its
// exit code, or 128 + N when signal N killed it.
func waitStatusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
}
