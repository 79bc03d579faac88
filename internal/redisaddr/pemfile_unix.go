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
// os.Open reads it, with blocking reads, which end; anything else (a FIFO,
// a pipe, a device) stays non-blocking and is read by readPipe for at most
// wait.
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
	defer syscall.Close(fd)
	return readPipe(fd, st.Mode&syscall.S_IFMT == syscall.S_IFIFO, limit, wait)
}

// fifoAwaitsWriter, when set (by a test), is called each time readPipe finds
// a FIFO empty with no writer and waits for one.
var fifoAwaitsWriter func()

// pipePoll is how long readPipe sleeps when the file has nothing to read
// yet.
const pipePoll = 10 * time.Millisecond

// readPipe reads fd, opened non-blocking by readFile, until its end or
// limit bytes, for at most wait: the error then matches
// os.ErrDeadlineExceeded. When there is nothing to read yet it sleeps
// pipePoll and reads again, rather than wait for the poller: on darwin
// kqueue tells no reader of a FIFO that its last writer closed it (Go's os
// package leaves FIFOs out of the poller there for that), and a read is
// the one way to learn it everywhere. An end of file before any byte from
// a FIFO means that no writer has opened it yet (a FIFO with none reads
// as empty), so readPipe waits for one to write; one that opens it and
// writes nothing, or a pipe whose writer closed it empty, leaves readPipe
// to its bound.
func readPipe(fd int, fifo bool, limit int, wait time.Duration) ([]byte, error) {
	deadline := time.Now().Add(wait)
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case n > 0:
			b = append(b, buf[:n]...)
			if len(b) >= limit {
				return b, nil
			}
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			// Nothing to read yet: sleep and read again.
		case err != nil:
			return b, err
		case !fifo || len(b) > 0:
			return b, nil // the end of the file
		default:
			// No writer yet.
			if fifoAwaitsWriter != nil {
				fifoAwaitsWriter()
			}
		}
		if !time.Now().Before(deadline) {
			return b, os.ErrDeadlineExceeded
		}
		time.Sleep(min(pipePoll, time.Until(deadline)))
	}
}
