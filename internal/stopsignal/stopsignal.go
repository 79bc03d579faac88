// Package stopsignal gives the repository's long-running tools (the
// benchmark runner, the fault soak, bench's tracecount) the context they run
// under: it ends at the first interrupt (Ctrl-C) or termination request
// (kill's default, and what a CI job's timeout or a container's stop sends
// first), so that they stop early, clean up and report what ran, rather than
// die without it.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// signals are the signals that end Context's context.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Context returns a context that ends at the first of signals (an interrupt
// or SIGTERM), and the function that stops listening for them. Once the
// context has ended, the signals' default action is back: a second one ends
// the process at once, as a second Ctrl-C does for most commands.
func Context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}
