// Package respguard bounds what a Redis server's replies may make a client
// allocate before it has read them.
//
// The Redis clients under the drivers trust the sizes a reply announces:
// go-redis, redigo and rueidis allocate an array of "*4000000000" elements,
// or a string of "$4000000000" bytes, before they read any of it, and
// go-redis and redigo read nested arrays by recursion. A broken or hostile
// server (or anything between the client and a server reached without TLS)
// can so end the whole process with thirteen bytes: Go's "fatal error:
// runtime: out of memory" or "stack overflow" cannot be recovered from, and a
// lock client must survive any one of its nodes.
//
// [Wrap] puts a guard on a connection that follows the RESP2 and RESP3
// replies as they are read, and breaks the connection, with an error that
// says why, before the client sees a reply that announces more than [Limits]
// allows. The replies the drivers receive (OK, integers, short arrays, the
// scripts' replies, INFO, HELLO, CLUSTER SLOTS and NODES, pub/sub messages)
// are far inside the limits.
package respguard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"syscall"
)

// Limits on one reply of a server. A reply beyond them breaks the
// connection.
const (
	// MaxDepth is the deepest nesting of arrays, maps, sets and pushes
	// (CLUSTER SLOTS nests four deep).
	MaxDepth = 32
	// MaxElements is the most elements one array, set or push announces
	// (a map: pairs).
	MaxElements = 1 << 20
	// MaxBulk is the longest bulk string (or verbatim string, blob error)
	// announced, in bytes.
	MaxBulk = 64 << 20
	// MaxLine is the longest line: a simple string, an error, a number.
	MaxLine = 1 << 20
)

// ErrRefused is the error of a connection broken by its guard; the error
// returned matches it with errors.Is and says which limit the reply broke.
var ErrRefused = errors.New("redis reply refused: a broken or hostile server")

// Wrap returns conn with a guard on what it reads (see the package's doc). The
// returned connection implements syscall.Conn when conn does, and returns
// conn from NetConn, for the checks that look at the socket (the guard keeps
// no bytes back: what the socket holds is what the client has not read).
func Wrap(conn net.Conn) net.Conn {
	g := &guarded{Conn: conn}
	if sc, ok := conn.(syscall.Conn); ok {
		return &guardedSyscall{guarded: g, sc: sc}
	}
	return g
}

// Dialer returns dial with a guard on every connection it makes (see
// Wrap), for the clients configured with a dial function; each of then, in
// order, wraps the guarded connection in turn (lastwords.Wrap, say).
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), then ...func(net.Conn) net.Conn) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn = Wrap(conn)
		for _, wrap := range then {
			conn = wrap(conn)
		}
		return conn, nil
	}
}

type guarded struct {
	net.Conn
	s   scanner
	err error // the refusal, once a reply broke a limit
}

func (g *guarded) Read(b []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.Conn.Read(b)
	if n > 0 {
		if clean, serr := g.s.scan(b[:n]); serr != nil {
			// The replies before the refused one go to the client; the
			// next read fails, and the client drops the connection (a
			// Close here would race the client's writes, whose error
			// could then be the one reported).
			g.err = fmt.Errorf("%w: %v", ErrRefused, serr)
			if clean > 0 {
				return clean, nil
			}
			return 0, g.err
		}
	}
	return n, err
}

// NetConn returns the connection under the guard.
func (g *guarded) NetConn() net.Conn { return g.Conn }

type guardedSyscall struct {
	*guarded
	sc syscall.Conn
}

func (g *guardedSyscall) SyscallConn() (syscall.RawConn, error) { return g.sc.SyscallConn() }

// scanner follows a stream of RESP replies, byte by byte where it must (the
// header lines) and by length where it can (a bulk string's data).
type scanner struct {
	line  []byte // the header line read so far, without its "\r\n"
	skip  int64  // bytes of a bulk string (and its "\r\n") left to pass
	stack []frame
}

// frame is an aggregate being read.
type frame struct {
	left int64 // elements still to come
	attr bool  // an attribute, which its parent does not count
}

// scan follows p, the next bytes of the stream. On an error, clean is how
// many bytes of p come before the line that broke a limit (0 when that line
// began in an earlier p): the replies before it, to pass on.
func (s *scanner) scan(p []byte) (clean int, err error) {
	off := 0 // of p's rest in p
	for off < len(p) {
		if s.skip > 0 {
			k := int(min(int64(len(p)-off), s.skip))
			s.skip -= int64(k)
			off += k
			if s.skip == 0 {
				s.done()
			}
			continue
		}
		start := off - len(s.line) // negative: the line began before p
		i := off
		for i < len(p) && p[i] != '\n' {
			i++
		}
		if len(s.line)+i-off > MaxLine {
			return max(start, 0), fmt.Errorf("a line longer than %d bytes", MaxLine)
		}
		s.line = append(s.line, p[off:i]...)
		if i == len(p) {
			return len(p), nil // the line goes on in the next read
		}
		off = i + 1
		line := s.line
		s.line = s.line[:0]
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return max(start, 0), errors.New("a line not ended by \\r\\n")
		}
		if err := s.header(line[:len(line)-1]); err != nil {
			return max(start, 0), err
		}
	}
	return len(p), nil
}

// header reads the header line of a reply (its type and the rest).
func (s *scanner) header(line []byte) error {
	if len(line) == 0 {
		return errors.New("an empty line")
	}
	kind, rest := line[0], line[1:]
	switch kind {
	case '+', '-', ':', ',', '#', '(', '_':
		s.done()
		return nil
	case '$', '!', '=':
		n, ok := parseLen(rest)
		switch {
		case !ok || (n == -1 && kind != '$'):
			return fmt.Errorf("a string of length %.20q", rest)
		case n > MaxBulk:
			return fmt.Errorf("a string of %d bytes, more than %d", n, MaxBulk)
		case n == -1: // RESP2's nil
			s.done()
		default:
			s.skip = n + 2
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, ok := parseLen(rest)
		switch {
		case !ok || (n == -1 && kind != '*'):
			return fmt.Errorf("an aggregate of %.20q elements", rest)
		case n > MaxElements:
			return fmt.Errorf("an aggregate of %d elements, more than %d", n, MaxElements)
		case n == -1: // RESP2's nil array
			s.done()
			return nil
		}
		if len(s.stack) >= MaxDepth {
			return fmt.Errorf("aggregates nested more than %d deep", MaxDepth)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		s.stack = append(s.stack, frame{left: n, attr: kind == '|'})
		if n == 0 {
			s.stack = s.stack[:len(s.stack)-1]
			if kind != '|' {
				s.done()
			}
		}
		return nil
	}
	return fmt.Errorf("a reply of unknown type %q", kind)
}

// parseLen reads the length of a header line: -1 or a count of digits
// only, without allocating (a header comes with every reply). A count too
// large for an int64 reads as math.MaxInt64, beyond every limit.
func parseLen(b []byte) (n int64, ok bool) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, true
	}
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64 // keep reading: a digit that is not one still fails
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// done counts a value read whole: an element of the aggregate being read,
// which may complete it, and so on up.
func (s *scanner) done() {
	for len(s.stack) > 0 {
		top := &s.stack[len(s.stack)-1]
		top.left--
		if top.left > 0 {
			return
		}
		attr := top.attr
		s.stack = s.stack[:len(s.stack)-1]
		if attr {
			return // an attribute precedes the value it describes, which counts
		}
	}
}
