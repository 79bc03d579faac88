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
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestBroken(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{io.EOF, true},
		{fmt.Errorf("redigo: %w", io.EOF), true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{net.ErrClosed, false},
		{errors.New("ERR wrong number of arguments"), false},
	} {
		if got := Broken(tc.err); got != tc.want {
			t.Errorf("Broken(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
