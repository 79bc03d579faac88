//go:build unix

package stopsignal_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/stopsignal"
)

// TestContextEndsAtTerm: SIGTERM sent to the process ends the context
// (without it among the signals, the test binary dies of the signal).
func TestContextEndsAtTerm(t *testing.T) {
	ctx, stop := stopsignal.Context()
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context still open 10s after SIGTERM")
	}
}
