package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// NodeError.Permanent tells the errors that VoteError.Permanent counts: the
// Redis errors driver.PermanentCode knows, and ErrClosed; not a timeout, a
// context's end, a broken connection, nor a Redis error retrying may fix.
func TestNodeErrorPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("NOPERM No permissions to access a key"), true},
		{fmt.Errorf("goredis: SET NX: %w", errors.New("WRONGPASS invalid username-password pair")), true},
		{redlock.ErrClosed, true},
		{fmt.Errorf("rueidis: %w", driver.ErrClosed), true},
		{driver.ErrNilClient, true},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{errors.New("LOADING Redis is loading the dataset in memory"), false},
		{errors.New("EOF"), false},
	} {
		ne := &redlock.NodeError{Addr: "127.0.0.1:1", Err: tc.err}
		if got := ne.Permanent(); got != tc.want {
			t.Errorf("NodeError{Err: %v}.Permanent() = %v, want %v", tc.err, got, tc.want)
		}
	}
}
