package connalive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, true},
		{fmt.Errorf("goredis: %w", os.ErrDeadlineExceeded), true},
		{context.DeadlineExceeded, true},
		{errors.Join(errors.New("node 1"), context.DeadlineExceeded), true},
		{context.Canceled, false},
		{io.EOF, false},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false},
		{net.ErrClosed, false},
		{errors.New("ERR wrong number of arguments"), false},
	} {
		if got := Timeout(tc.err); got != tc.want {
			t.Errorf("Timeout(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestTimeoutOfARead checks the error of a read whose deadline passed on a
// real connection.
func TestTimeoutOfARead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	if !Timeout(err) {
		t.Fatalf("Timeout(%v) = false for a read past its deadline", err)
	}
}

func TestTimeoutNilAllocatesNot(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Timeout(nil) }); n != 0 {
		t.Errorf("Timeout(nil) allocates %v times, want 0", n)
	}
}

// TestErrorsAllocateNot: Timeout and Broken of an error allocate nothing.
// A SET NX refused on a node whose key is held is an error reply in some
// client libraries (rueidis' nil), and the drivers ask Broken of it: with
// errors.As into a local net.Error, which escaped, each asked one
// allocation (two of every twenty per lock+unlock of the Far case).
func TestErrorsAllocateNot(t *testing.T) {
	for _, err := range []error{
		errors.New("redis nil message"),
		fmt.Errorf("wrapped: %w", errors.New("ERR unknown command")),
		&net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}},
		io.EOF,
	} {
		if n := testing.AllocsPerRun(100, func() { Timeout(err) }); n != 0 {
			t.Errorf("Timeout(%v) allocates %v times, want 0", err, n)
		}
		if n := testing.AllocsPerRun(100, func() { Broken(err) }); n != 0 {
			t.Errorf("Broken(%v) allocates %v times, want 0", err, n)
		}
	}
}
