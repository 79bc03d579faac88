package lastwords_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/lastwords"
)

// script is a net.Conn whose reads return the chunks given, then err, and
// whose writes fail with werr once set.
type script struct {
	net.Conn
	chunks []string
	err    error
	werr   error
}

func (s *script) Read(b []byte) (int, error) {
	if len(s.chunks) == 0 {
		return 0, s.err
	}
	n := copy(b, s.chunks[0])
	if s.chunks[0] = s.chunks[0][n:]; s.chunks[0] == "" {
		s.chunks = s.chunks[1:]
	}
	return n, nil
}

func (s *script) Write(b []byte) (int, error) {
	if s.werr != nil {
		return 0, s.werr
	}
	return len(b), nil
}

// readAll reads conn until an error, and returns it.
func readAll(conn net.Conn) error {
	b := make([]byte, 64)
	for {
		if _, err := conn.Read(b); err != nil {
			return err
		}
	}
}

const said = `(the server replied "ERR max number of clients reached" and closed the connection)`

// The server's error reply, read as the handshake's, is named in the error
// of the read or write that then finds the connection closed, whether it
// came in one read or byte by byte; the error still matches the network's.
func TestRefusalNamed(t *testing.T) {
	reply := "-ERR max number of clients reached\r\n"
	var bytes []string
	for i := range reply {
		bytes = append(bytes, reply[i:i+1])
	}
	for name, chunks := range map[string][]string{"OneRead": {reply}, "ByteByByte": bytes} {
		t.Run(name, func(t *testing.T) {
			conn := lastwords.Wrap(&script{chunks: chunks, err: io.EOF, werr: syscall.EPIPE})
			err := readAll(conn)
			if !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), said) {
				t.Errorf("read after the refusal: error %v, want io.EOF with %s", err, said)
			}
			if errors.Unwrap(err) != nil {
				t.Errorf("errors.Unwrap(%v) != nil: go-redis unwraps a handshake's error once, which would drop the reason", err)
			}
			_, err = conn.Write([]byte("PING\r\n"))
			if !errors.Is(err, syscall.EPIPE) || !strings.Contains(err.Error(), said) {
				t.Errorf("write after the refusal: error %v, want EPIPE with %s", err, said)
			}
		})
	}
}

// Once the server sent more than one error reply, the connection is passed
// through: a later end of file is the server's business, not a refusal
// (its first reply may have been NOPERM for the first command, then the
// server restarted); so is a timeout, and an error with no reply before
// it.
func TestOnlyRefusalsNamed(t *testing.T) {
	for _, replies := range [][]string{
		{"+OK\r\n"},
		{"-ERR unknown command 'HELLO'\r\n", "+OK\r\n"},
		{"-NOPERM this user has no permissions to run the 'set' command\r\n-NOPERM", " again\r\n"},
	} {
		conn := lastwords.Wrap(&script{chunks: replies, err: io.EOF})
		if err := readAll(conn); err != io.EOF {
			t.Errorf("end of file after replies %q: error %v, want io.EOF as it is", replies, err)
		}
	}
	conn := lastwords.Wrap(&script{chunks: []string{"-ERR max number of clients reached\r\n"}, err: os.ErrDeadlineExceeded})
	if err := readAll(conn); err != os.ErrDeadlineExceeded {
		t.Errorf("timeout after an error reply: error %v, want it as it is", err)
	}
	conn = lastwords.Wrap(&script{err: io.EOF})
	if err := readAll(conn); err != io.EOF {
		t.Errorf("end of file with nothing read: error %v, want io.EOF as it is", err)
	}
}

// A first reply that answers a command, never a server's refusal of the
// connection (NOPERM, READONLY, LOADING, NOSCRIPT: the codes of replies to
// what a client asked), is not named when the connection breaks before the
// next reply: the client that sends no handshake (redigo without a password
// or a database) reads its first command's reply first, and a restart during
// its second command would be blamed on that reply. A server refuses a
// connection with ERR (maxclients, a protocol error) or DENIED (protected
// mode), which are named.
func TestCommandRepliesNotNamed(t *testing.T) {
	for _, reply := range []string{
		"-NOPERM User u has no permissions to access the 'k' key\r\n",
		"-READONLY You can't write against a read only replica.\r\n",
		"-LOADING Redis is loading the dataset in memory\r\n",
		"-NOSCRIPT No matching script. Please use EVAL.\r\n",
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	} {
		conn := lastwords.Wrap(&script{chunks: []string{reply}, err: io.EOF, werr: syscall.EPIPE})
		if err := readAll(conn); err != io.EOF {
			t.Errorf("end of file after the first reply %q: error %v, want io.EOF as it is: the reply answered a command", reply, err)
		}
		if _, err := conn.Write([]byte("PING\r\n")); err != syscall.EPIPE {
			t.Errorf("broken pipe after the first reply %q: error %v, want EPIPE as it is: the reply answered a command", reply, err)
		}
	}
	for _, reply := range []string{
		"-DENIED Redis is running in protected mode because protected mode is enabled\r\n",
		"-ERR Protocol error: invalid multibulk length\r\n",
	} {
		conn := lastwords.Wrap(&script{chunks: []string{reply}, err: io.EOF})
		want := fmt.Sprintf("(the server replied %q and closed the connection)", strings.TrimSuffix(reply[1:], "\r\n"))
		if err := readAll(conn); !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), want) {
			t.Errorf("end of file after the first reply %q: error %v, want io.EOF with %s", reply, err, want)
		}
	}
}

// Redis's reply to an unknown command echoes its arguments, a password
// among them: it is cut before them.
func TestEchoedArgumentsCut(t *testing.T) {
	conn := lastwords.Wrap(&script{chunks: []string{"-ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'u' 's3cret' \r\n"}, err: syscall.ECONNRESET})
	err := readAll(conn)
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `"ERR unknown command 'HELLO'"`) {
		t.Errorf("error %v: want the reply cut before its echoed arguments", err)
	}
}

// A timeout keeps being one through the hint.
func TestHintKeepsTimeout(t *testing.T) {
	var ne net.Error
	err := lastwords.Hint(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, "why")
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Hint of a timeout = %v: want a net.Error timeout matching os.ErrDeadlineExceeded", err)
	}
}

// The wrapped connection keeps what the checks of the socket look for.
func TestWrapKeepsSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := lastwords.Wrap(c)
	if _, ok := w.(syscall.Conn); !ok {
		t.Error("Wrap of a TCP connection does not implement syscall.Conn")
	}
	if nc, ok := w.(interface{ NetConn() net.Conn }); !ok || nc.NetConn() != c {
		t.Error("Wrap's NetConn does not return the connection wrapped")
	}
}

// answering is a connection whose every read returns a reply, +OK.
type answering struct{ net.Conn }

func (answering) Read(b []byte) (int, error)  { return copy(b, "+OK\r\n"), nil }
func (answering) Write(b []byte) (int, error) { return len(b), nil }

// What Wrap adds to a write and a read on a connection that works, past
// its first reply: compare Wrapped with Raw, in the same run.
func BenchmarkWriteRead(b *testing.B) {
	for _, tc := range []struct {
		name string
		conn net.Conn
	}{{"Raw", answering{}}, {"Wrapped", lastwords.Wrap(answering{})}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 64)
			for b.Loop() {
				tc.conn.Write(buf[:16])
				tc.conn.Read(buf)
			}
		})
	}
}

// What Wrap adds to a connection's dial: its first reply, one write and
// one read.
func BenchmarkFirstReply(b *testing.B) {
	for _, tc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{{"Raw", func(c net.Conn) net.Conn { return c }}, {"Wrapped", lastwords.Wrap}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 64)
			for b.Loop() {
				conn := tc.wrap(answering{})
				conn.Write(buf[:16])
				conn.Read(buf)
			}
		})
	}
}
