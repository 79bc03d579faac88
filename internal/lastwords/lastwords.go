// Package lastwords names, in the error a client reports, the reason a
// Redis server gave as it closed a new connection.
//
// A server that refuses a connection writes an error reply to it unasked
// and closes it: "-ERR max number of clients reached" when it has reached
// its maxclients limit, "-DENIED Redis is running in protected mode ..."
// to a client from another host in protected mode. The clients write
// their handshake (HELLO, AUTH, CLIENT SETINFO) at once, read that reply as
// the handshake's, and go on: go-redis takes it for a server without HELLO
// and writes its fallback, which fails with a broken pipe; rueidis and
// valkey-go read the replies of the rest of the handshake, which end in an
// end of file. The error a user sees is then "broken pipe" or "EOF", and
// the reason is lost: the client read it and dropped it, so that nothing is
// left on the socket to read when the error comes.
//
// [Wrap] watches what the client reads on a connection: when the server's
// first reply is an error, and nothing has come after it, it adds that
// reply to the error of a read or write that finds the connection closed
// or reset (an end of file, ECONNRESET, EPIPE):
//
//	write tcp 127.0.0.1:50160->127.0.0.1:39295: write: broken pipe (the server replied "ERR max number of clients reached" and closed the connection)
//
// A later reply ends the watch, and so does a first reply whose code is
// not one a server refuses a connection with (ERR or DENIED), so that a
// connection that broke later (a restart, after NOPERM for its first
// command, even during the second) is not blamed on its first reply. Wrap
// reads nothing itself, so it adds no wait and no system call: on a
// connection that works it looks at the first byte of the server's first
// reply, and from then on costs an atomic load per read and write.
//
// Over TLS a Redis server at maxclients writes nothing: it refuses the
// connection before the TLS handshake, which then fails with an end of file
// or a reset (see package tlsdial, which says so in the error).
package lastwords

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/replyerr"
)

// maxSaid is the most bytes of the server's error reply kept: a refusal is
// one short line.
const maxSaid = 200

// Wrap returns conn watching for the server's last words (see the package's
// doc). The returned connection implements syscall.Conn when conn does, and
// returns conn from NetConn, for the checks that look at the socket.
func Wrap(conn net.Conn) net.Conn {
	w := &watched{Conn: conn}
	w.watching.Store(true)
	if sc, ok := conn.(syscall.Conn); ok {
		return &watchedSyscall{watched: w, sc: sc}
	}
	return w
}

// watched is a connection whose server has sent nothing yet, or one error
// reply.
type watched struct {
	net.Conn
	// watching is true until the server's first reply if it is not a
	// refusal (an ERR or DENIED error reply), else until its second: from
	// then on the connection is passed through.
	watching atomic.Bool
	said     atomic.Pointer[string] // the first reply, an error, once read whole

	mu     sync.Mutex // the scan's state; reads are not concurrent, but cheap to guard
	inLine bool       // within an error reply's line
	cr     bool       // the line's last byte read was '\r'
	line   []byte     // the error reply read so far, up to maxSaid bytes
}

func (w *watched) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if !w.watching.Load() {
		return n, err
	}
	if n > 0 {
		w.scan(b[:n])
	}
	return n, w.explain(err)
}

func (w *watched) Write(b []byte) (int, error) {
	n, err := w.Conn.Write(b)
	if err == nil || !w.watching.Load() {
		return n, err
	}
	return n, w.explain(err)
}

// NetConn returns the connection watched.
func (w *watched) NetConn() net.Conn { return w.Conn }

// scan follows the replies in b: a first reply that is a refusal
// ("-ERR ...\r\n", "-DENIED ...\r\n") is kept; any other first reply, and
// the first byte of a second, ends the watch.
func (w *watched) scan(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b {
		if !w.inLine {
			if c != '-' || w.said.Load() != nil {
				w.watching.Store(false)
				w.said.Store(nil)
				w.line = nil
				return
			}
			w.inLine, w.cr, w.line = true, false, w.line[:0]
			continue
		}
		if c == '\n' && w.cr {
			said := strings.TrimSuffix(string(w.line), "\r")
			if !refusal(said) {
				// A reply to a command (NOPERM, READONLY, ...):
				// a later break is not its doing.
				w.watching.Store(false)
				w.line = nil
				return
			}
			// Redis's reply to an unknown command echoes its arguments
			// ("ERR unknown command 'HELLO', with args beginning with: '3'
			// 'AUTH' 'user' 'password'", from a server older than HELLO):
			// they are cut off, so that no error shows a password.
			said = replyerr.CutEcho(said)
			w.said.Store(&said)
			w.inLine = false
			continue
		}
		w.cr = c == '\r'
		if len(w.line) < maxSaid {
			w.line = append(w.line, c)
		}
	}
}

// refusal reports whether said, an error reply without its "-", has a code
// a server refuses a connection with as it closes it: ERR ("ERR max number of
// clients reached", "ERR Protocol error: ...") or DENIED (protected mode).
// The other codes (NOPERM, READONLY, LOADING, NOSCRIPT, ...) answer a
// command, which is the first reply on a connection without a handshake
// (redigo's without a password or a database): a break during the next
// command, a restart, is not that reply's doing.
func refusal(said string) bool {
	code, _, _ := strings.Cut(said, " ")
	return code == "ERR" || code == "DENIED"
}

// explain adds the server's last error reply to err when err says that the
// connection was closed or reset.
func (w *watched) explain(err error) error {
	if !connalive.Broken(err) {
		return err
	}
	said := w.said.Load()
	if said == nil {
		return err
	}
	return Hint(err, fmt.Sprintf("the server replied %q and closed the connection", *said))
}

type watchedSyscall struct {
	*watched
	sc syscall.Conn
}

func (w *watchedSyscall) SyscallConn() (syscall.RawConn, error) { return w.sc.SyscallConn() }

// Hint returns err with hint added to its message, in parentheses. The
// error returned matches what err matches (errors.Is, errors.As), keeps a
// timeout a net.Error timeout, and unwraps to a slice, so that
// errors.Unwrap returns nil: go-redis unwraps once the error of a
// connection's handshake (HELLO), which would drop the hint.
func Hint(err error, hint string) error { return &hintError{err: err, hint: hint} }

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return fmt.Sprintf("%v (%s)", e.err, e.hint) }

// Unwrap returns the error hinted at.
func (e *hintError) Unwrap() []error { return []error{e.err} }

// Timeout is the hinted error's.
func (e *hintError) Timeout() bool {
	t, ok := e.err.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

// Temporary is false: the connection is lost.
func (e *hintError) Temporary() bool { return false }
