//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// forwardedSignals are the signals run passes on to its command.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// stopSignals are the signals that end hold's holding, and demo: those
// that end a process by default, so that none leaves the lock held for its
// TTL (SIGQUIT would dump the goroutines and exit with 2).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// terminate asks p to stop with SIGTERM.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// signalExitCode is the exit status of a process killed by sig: 128 + its
// number.
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitFailure
}

// signaledStatus returns 128 + N and N when a signal N killed the process.
func signaledStatus(ps *os.ProcessState) (int, syscall.Signal, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, 0, false
	}
	return exitSignalBase + int(ws.Signal()), ws.Signal(), true
}

// dieSignals are the signals by which run ends itself, once the lock is
// released, when one of them ended its wait for the lock or killed CMD,
// rather than exit with 128 + N: callers read how a command ended, not only
// the status a shell shows for it. bash stops a script on Ctrl-C only when
// the command it waited for died of SIGINT too (one that exits, with 130 or
// else, is taken to have handled it, and the script goes on), as it does
// at flock(1), which SIGINT kills; systemd counts a main process that
// SIGTERM, SIGINT or SIGHUP ended as stopped cleanly, and one that exited
// with 143 as failed. These are the signals that end a Go program by the
// signal itself once they are no longer caught (SIGQUIT would dump its
// goroutines, and the others are ignored).
var dieSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// dieBySignal ends the process by sig, one of dieSignals, and returns when
// it cannot: sig is another, or ignored (as it was when run started: it
// stays so), or the process is the first of its PID namespace (PID 1: a
// container's entrypoint without an init of its own). The kernel drops a
// signal left at its default action that reaches such a process from
// inside its namespace, its own included; and Go's runtime, whose handler
// stays installed after signal.Reset and so gets it, then exits with 2,
// the status of bad arguments (docker stop of a container whose first
// process was run made it exit with 2). main exits with 128 + N instead,
// as timeout(1) does as PID 1.
func dieBySignal(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok || !slices.Contains(dieSignals, sig) || signal.Ignored(sig) || os.Getpid() == 1 {
		return
	}
	signal.Reset(sig)
	if syscall.Kill(os.Getpid(), s) != nil {
		return
	}
	// A signal a process sends itself is delivered before kill(2)
	// returns to a thread that does not block it, as Go's threads do not;
	// should it not end the process, main exits with 128 + N.
	time.Sleep(time.Second)
}

// execFormat reports whether err is the kernel's refusal to execute a file
// that has no #! line nor a format it knows (ENOEXEC): run then has /bin/sh
// run it, as execvp(3) does, and flock(1) and shells with it.
func execFormat(err error) bool { return errors.Is(err, syscall.ENOEXEC) }

// missingInterpreter returns an error that names the #! line of the file
// at path when the interpreter it names does not exist, and nil otherwise.
// exec(2) fails with ENOENT then, which reads as if the file were missing
// ("fork/exec ./job.sh: no such file or directory"), and only once the lock
// is taken; shells say "bad interpreter". The line is quoted, which shows
// the classic cause: a script with CRLF line ends ("#!/bin/sh\r").
func missingInterpreter(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // exec says why
	}
	defer f.Close()
	head := make([]byte, 256) // as much of the line as Linux reads
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return nil
	}
	interp, _, _ := strings.Cut(strings.TrimLeft(rest, " \t"), " ")
	interp, _, _ = strings.Cut(interp, "\t")
	if interp == "" {
		return nil
	}
	if _, err := os.Stat(interp); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%s: bad interpreter: its first line, %q, names %q, which does not exist", path, line, interp)
}

// catchSIGPIPE makes a write to a closed stdout or stderr fail with EPIPE
// rather than kill the process by SIGPIPE, which would leave a lock held for
// its TTL: hold, whose reader went away, then releases the lock and exits
// with 1. A caught signal is reset to its default in the commands run
// starts, unlike an ignored one.
func catchSIGPIPE() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

// The signals run sends to the processes of CMD, by name.
const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
