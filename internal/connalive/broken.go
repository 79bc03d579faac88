package connalive

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// Broken reports whether err, a call's error, says that the peer closed or
// reset the connection (end of file, ECONNRESET, a broken pipe): the error
// of a command sent on a connection the server closed while it was idle (a
// restart, CLIENT KILL), which may go again on a new connection. A timeout,
// a context's end, a connection closed by this process (net.ErrClosed) and
// an error reply are not.
func Broken(err error) bool {
	if err == nil {
		return false
	}
	// AsType, not As: no allocation, for the error replies it sees most
	// (a SET NX's nil reply is an error in some client libraries).
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED)
}
