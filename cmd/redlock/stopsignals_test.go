package main

import (
	"os"
	"slices"
	"syscall"
	"testing"
)

// TestStopSignalsIncludeSIGTERM: SIGTERM stops hold, run and demo on every
// system, Windows included, where Go delivers the console's close, logoff
// and shutdown events as SIGTERM and ends the process once the handler
// returns: without it there, hold and run died holding the lock (it
// expired after one TTL) instead of releasing it. Only os.Interrupt was
// caught on Windows before; this test, without a build tag, fails there
// then.
func TestStopSignalsIncludeSIGTERM(t *testing.T) {
	if !stops(syscall.SIGTERM) {
		t.Errorf("stopSignals %v: SIGTERM does not stop hold or run", stopSignals)
	}
	if !slices.Contains(forwardedSignals, os.Signal(syscall.SIGTERM)) {
		t.Errorf("forwardedSignals %v: run does not take SIGTERM", forwardedSignals)
	}
}
