//go:build !unix

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals run passes on to its command (on
// Windows, os.Process.Signal cannot send them: the console delivers its
// events to CMD itself).
var forwardedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// stopSignals are the signals that end hold's holding, and demo. On Windows,
// Go delivers Ctrl-C and Ctrl-Break as os.Interrupt, and the console's
// close, logoff and shutdown events as SIGTERM, which the process must catch
// to release its lock before Windows ends it.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// terminate stops p; without SIGTERM, it is killed.
func terminate(p *os.Process) error { return p.Kill() }

// signalExitCode is the exit status run reports for a wait ended by sig.
func signalExitCode(os.Signal) int { return exitSignalBase + 2 }

// signaledStatus reports no signal: processes here are not killed by one.
func signaledStatus(*os.ProcessState) (int, syscall.Signal, bool) { return 0, 0, false }

// dieBySignal returns: there are no signals to end a process by.
func dieBySignal(os.Signal) {}

// execFormat reports false: there is no shell to fall back on.
func execFormat(error) bool { return false }

// missingInterpreter returns nil: Windows runs no #! line.
func missingInterpreter(string) error { return nil }

// catchSIGPIPE does nothing: there is no SIGPIPE.
func catchSIGPIPE() {}

// The signals run sends to the processes of CMD, by name.
const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
