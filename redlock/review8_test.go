package redlock_test

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// derefObserver is an Observer whose methods dereference their receiver,
// as most do.
type derefObserver struct {
	redlock.NopObserver
	calls int
}

// An Observer that is a nil pointer (a variable never set) is bad input, as
// a nil node is: New and Open refuse it with an error that names it. New
// took it, and the first TryLock panicked with a nil pointer dereference
// in the observer's method.
func TestReviewTypedNilObserver(t *testing.T) {
	var o *derefObserver
	nodes := []driver.Node{memory.New(), memory.New(), memory.New()}
	c, err := redlock.New(nodes, redlock.WithObserver(o))
	if err == nil {
		defer c.Close()
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("New took a nil *derefObserver, and TryLock panicked: %v", v)
			}
		}()
		_, err := c.TryLock(t.Context(), "k")
		t.Fatalf("New took a nil *derefObserver; TryLock: %v", err)
	}
	if !strings.Contains(err.Error(), "WithObserver") || !strings.Contains(err.Error(), "nil *redlock_test.derefObserver") {
		t.Errorf("New with a nil *derefObserver: %v, want an error naming WithObserver and the type", err)
	}
	for _, n := range nodes {
		n.Close()
	}
	_, err = redlock.Open("memory", []string{"typed-nil-observer"}, redlock.WithObserver(o))
	if err == nil || !strings.Contains(err.Error(), "WithObserver") {
		t.Errorf("Open with a nil *derefObserver: %v, want an error naming WithObserver", err)
	}
}
