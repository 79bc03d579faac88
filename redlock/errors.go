package redlock

import (
	"errors"
	"fmt"

	"github.com/go-redlock/redlock/driver"
)

var (
	// ErrNotObtained is returned by TryLock and Lock when the lock was not
	// obtained: too few nodes granted it, or too little validity was left.
	ErrNotObtained = errors.New("redlock: lock not obtained")

	// ErrLockLost is returned by Extend and Unlock when fewer than a quorum of
	// nodes still held the lock.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrClosed is returned by calls on a Client after Close, and is the
	// cause of a NodeError from a node that was closed. It is the same value
	// as driver.ErrClosed, which drivers return, so one errors.Is test covers
	// both.
	ErrClosed = driver.ErrClosed
)

// NodeError is the failure of one node during a call. Errors from TryLock,
// Lock, Extend and Unlock join one NodeError for each node that failed.
type NodeError struct {
	// Addr names the node: its address with any password removed.
	Addr string
	// Err is what went wrong.
	Err error
}

// Error returns the node's address and the cause.
func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %s: %v", e.Addr, e.Err)
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }
