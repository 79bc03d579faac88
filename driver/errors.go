package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redlock/redlock/internal/ctxend"
)

// ErrClosed is the error, or the cause of the error, that a Node returns for
// calls after Close. It is also the error of calls on a redlock.Client after
// Close: redlock.ErrClosed is this same value. Drivers may wrap it; test with
// errors.Is. A node over a client of the user's should return it too once
// that client is closed, when the client says so unambiguously (the goredis,
// redigo, rueidis and valkeygo drivers do): no retry opens it again, and redlock's Lock and Do
// stop at once when too many nodes answer it for a quorum. A Node's error
// matches it only for a call that was never sent: a call that Close cut in
// flight has an unknown outcome, and an error that does not match it.
var ErrClosed = errors.New("redlock: closed")

// ContextError returns err so that errors.Is(result, ctx.Err()) holds when
// ctx is done, as the Node contract requires. A context whose deadline has
// passed counts as done even before it says so: clients bound a read by a
// socket deadline equal to the context's, which can fire first and report a
// plain network timeout. ContextError returns nil for a nil err and err itself
// when ctx is not done.
func ContextError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cerr := ctxend.Err(ctx)
	if cerr == nil {
		return err
	}
	if errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}
