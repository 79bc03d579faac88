package main

import (
	"fmt"
	"os"
)

// Exit codes of the command. run also exits with its command's own status.
const (
	// exitOK: success.
	exitOK = 0
	// exitFailure: an error of redlock itself (a node set that doctor
	// finds unsafe, a failed demo, a soak that found overlaps).
	exitFailure = 1
	// exitUsage: bad flags or arguments, no nodes, a bad address or option,
	// two addresses of one server (redlock.ErrSameServer).
	exitUsage = 2
	// exitUnavailable: run or hold did not obtain the lock because too many
	// nodes failed (errors, timeouts) for a quorum to be possible, or status
	// could not ask a quorum (EX_UNAVAILABLE of sysexits.h).
	exitUnavailable = 69
	// exitConflict: run or hold did not obtain the lock within --wait because
	// it is held elsewhere (EX_TEMPFAIL of sysexits.h: try again later);
	// --conflict-exit-code replaces it.
	exitConflict = 75
	// exitLockLost: run lost the lock while its command ran, or hold while
	// it held it.
	exitLockLost = 76
	// exitCannotExec: run found the command but could not execute it, as
	// shells report it.
	exitCannotExec = 126
	// exitNotFound: run did not find the command, as shells report it.
	exitNotFound = 127
	// exitSignalBase plus a signal's number is the status of a process
	// killed by that signal, as shells report it.
	exitSignalBase = 128
)

// exitError ends the command with an exit code. err, when not nil, is printed
// to stderr first.
type exitError struct {
	code int
	err  error
	// signal, when not nil, is the signal that ended run: it ended the
	// wait for the lock, or killed CMD. main then ends the process by it
	// (see dieBySignal), which a shell reports as code too.
	signal os.Signal
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes the command exit with code, printing
// err unless it is nil.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// exitBySignal returns an error that makes the command end by sig, as one
// that sig killed (where it can: see dieBySignal), or else exit with 128 +
// its number, printing err unless it is nil.
func exitBySignal(sig os.Signal, err error) error {
	return &exitError{code: signalExitCode(sig), err: err, signal: sig}
}

// usageErrorf returns an error that makes the command exit with exitUsage.
func usageErrorf(format string, args ...any) error {
	return exitWith(exitUsage, fmt.Errorf(format, args...))
}
