//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals run passes on to its command.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// holdSignals are the signals that end hold's holding.
var holdSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

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

// signaledStatus returns 128 + N when a signal N killed the process.
func signaledStatus(ps *os.ProcessState) (int, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return exitSignalBase + int(ws.Signal()), true
}
