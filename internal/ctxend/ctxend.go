// Package ctxend tells whether a context has ended, counting a deadline
// that has passed before the context's own timer fired.
package ctxend

import (
	"context"
	"time"
)

// Err returns ctx.Err(), or context.DeadlineExceeded when ctx's deadline has
// passed though its timer has not fired yet (ctx.Err() says so a moment
// later): a call cut by that deadline (a driver whose socket deadline is the
// context's) can fail before ctx.Err() tells why, and its error must say
// that the context ended. It returns nil while ctx runs.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
