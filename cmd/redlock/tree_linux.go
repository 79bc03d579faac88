package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
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

// descendants returns the process IDs of every descendant of run (CMD and
// whatever it started), read from /proc: a process that starts or ends
// meanwhile may be missed or listed.
func descendants() []int { return tree(false) }

// signalChildren sends sig to run's children: CMD, or, once CMD has exited,
// the processes run adopted from it.
func signalChildren(sig syscall.Signal) {
	for _, pid := range tree(true) {
		_ = syscall.Kill(pid, sig)
	}
}

// tree returns the descendants of run, or its children only.
func tree(childrenOnly bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			if !childrenOnly {
				queue = append(queue, c)
			}
		}
	}
	return out
}

// parentOf returns the parent of process pid, from /proc/pid/stat, whose
// second field (the command's name, in parentheses) may hold any byte.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:]) // state, ppid, ...
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}

// signalTree sends sig to every descendant of run; it returns how many it
// found.
func signalTree(sig syscall.Signal) int {
	pids := descendants()
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return len(pids)
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
			exited <- cmdExit{status: waitStatusCode(ws), leftovers: hasChildren()}
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
