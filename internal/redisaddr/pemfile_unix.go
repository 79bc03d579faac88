//go:build unix

package redisaddr

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// readFile reads the file at path until its end or limit bytes. It opens
// it without waiting: a FIFO opened for reading blocks in open(2) until a
// writer opens it, forever if none does, so it is opened with O_NONBLOCK,
// which returns at once. A regular file (or a directory) is then read as
// os.Open reads it, with blocking reads, which end; anything else stays
// non-blocking, registered with Go's poller (kqueue too, for a FIFO on
// darwin, which os.OpenFile would not register), and is read by readPipe for
// at most wait.
func readFile(path string, limit int, wait time.Duration) ([]byte, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR:
		if err := syscall.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, int64(limit)))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return readPipe(f, st.Mode&syscall.S_IFMT == syscall.S_IFIFO, limit, wait)
}

// fifoAwaitsWriter, when set (by a test), is called each time readPipe finds
// a FIFO empty with no writer and waits for one.
var fifoAwaitsWriter func()

// readPipe reads f, opened non-blocking by readFile, until its
// end or limit bytes, for at most wait: the error then matches
// os.ErrDeadlineExceeded. An end of file before any byte from a FIFO means
// that no writer has opened it yet (a FIFO with none reads as empty), so
// readPipe waits for one to write; one that opens it and writes nothing
// leaves readPipe to its bound. A file the poller does not take (a device)
// is read as it comes, without a wait.
func readPipe(f *os.File, fifo bool, limit int, wait time.Duration) ([]byte, error) {
	if err := f.SetReadDeadline(time.Now().Add(wait)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		b    []byte
		buf  = make([]byte, 32<<10)
		rerr error
	)
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), buf)
			switch {
			case n > 0:
				b = append(b, buf[:n]...)
				if len(b) >= limit {
					return true
				}
			case errors.Is(err, syscall.EINTR):
			case errors.Is(err, syscall.EAGAIN):
				return false // wait until readable, or the deadline
			case err != nil:
				rerr = err
				return true
			case fifo && len(b) == 0:
				if fifoAwaitsWriter != nil {
					fifoAwaitsWriter()
				}
				return false // no writer yet: wait for one
			default:
				return true // the end of the file
			}
		}
	})
	if err == nil {
		err = rerr
	}
	return b, err
}
