package connalive

import (
	"context"
	"errors"
	"net"
)

// Timeout reports whether err, a call's error, says that a deadline passed
// before the answer came: a network timeout (a read or write deadline, a
// dial's) or context.DeadlineExceeded. A caller that must tell its own
// context's end from the network's checks ctx.Err() beside it.
func Timeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err) // not As: no allocation
	return ok && ne.Timeout()
}
