//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisaddr

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/redisserver"
)

// hangGuard is how long a test waits for ParseTLS before it calls it hung:
// a guard against a wait without end, not a measure of speed.
const hangGuard = time.Minute

// parseTLSBounded runs ParseTLS on addr and fails the test if it has not
// returned within hangGuard; unblock is called then, to end the call.
func parseTLSBounded(t *testing.T, addr string, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, cfg, err := ParseTLS(addr, nil)
		if err == nil && cfg.RootCAs == nil {
			err = errors.New("no RootCAs in the configuration")
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		unblock()
		<-done
		t.Fatalf("ParseTLS(%q) had not returned after %v", addr, hangGuard)
		return nil
	}
}

// withPipeWait sets pipeWait to d for the test.
func withPipeWait(t *testing.T, d time.Duration) {
	old := pipeWait
	pipeWait = d
	t.Cleanup(func() { pipeWait = old })
}

// A tls_ca_file that names a FIFO no process writes to returns an error
// that says so once pipeWait has passed, rather than blocking Open for
// ever in open(2); one with a writer, whether it opened the FIFO before
// the reader or after, is read.
func TestPEMFileFIFO(t *testing.T) {
	withPipeWait(t, 200*time.Millisecond)
	dir := t.TempDir()
	certs, err := redisserver.GenerateCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	mkfifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// unblock opens fifo for writing and closes it, which ends a reader
	// blocked in open(2) (before the fix), then reading an empty file.
	unblock := func(fifo string) func() {
		return func() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	}

	t.Run("NoWriter", func(t *testing.T) {
		fifo := mkfifo("nowriter.pem")
		err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+fifo, unblock(fifo))
		want := "tls_ca_file " + fifo + ": nothing to read after 200ms"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTLS with a FIFO without writer: error %v, want one with %q", err, want)
		}
	})

	// writeAll writes caPEM to w and closes it.
	writeAll := func(w *os.File, errs chan<- error) {
		_, err := w.Write(caPEM)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		errs <- err
	}

	t.Run("WriterFirst", func(t *testing.T) {
		fifo := mkfifo("writerfirst.pem")
		errs := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the reader opens
			if err != nil {
				errs <- err
				return
			}
			writeAll(w, errs)
		}()
		if err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+fifo, unblock(fifo)); err != nil {
			t.Errorf("ParseTLS with a FIFO a writer writes the CA into: %v", err)
		}
		// A writer still blocked in open (the reader never opened the
		// FIFO) is let go by another reader, whose Close fails its write.
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
		if err := <-errs; err != nil {
			t.Errorf("the writer: %v", err)
		}
	})

	t.Run("WriterAfterReader", func(t *testing.T) {
		// The writer opens the FIFO only once the reader has found it
		// empty, without a writer (fifoAwaitsWriter): the reader must
		// wait for the writer rather than take the FIFO for an empty
		// file.
		fifo := mkfifo("writerlate.pem")
		awaits := make(chan struct{})
		var once sync.Once
		fifoAwaitsWriter = func() { once.Do(func() { close(awaits) }) }
		defer func() { fifoAwaitsWriter = nil }()
		errs := make(chan error, 1)
		stop := make(chan struct{})
		go func() {
			select {
			case <-awaits:
			case <-stop:
				errs <- errors.New("the reader never waited for a writer")
				return
			}
			w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				errs <- err
				return
			}
			writeAll(w, errs)
		}()
		if err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+fifo, unblock(fifo)); err != nil {
			t.Errorf("ParseTLS with a FIFO a writer opens after the reader found it empty: %v", err)
		}
		close(stop)
		if err := <-errs; err != nil {
			t.Errorf("the writer: %v", err)
		}
	})

	// A pipe as bash's process substitution <(cat ca.pem) gives it: a
	// /dev/fd path of a pipe with a writer.
	t.Run("ProcessSubstitution", func(t *testing.T) {
		r, w, path := pipe(t)
		errs := make(chan error, 1)
		go writeAll(w, errs)
		if err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+path, func() { r.Close() }); err != nil {
			t.Errorf("ParseTLS with %s, a pipe with a writer: %v", path, err)
		}
		if err := <-errs; err != nil {
			t.Errorf("the writer: %v", err)
		}
	})

	// A pipe whose writer wrote the CA in pieces and closed it before the
	// reader came: read whole, its end of file seen by a read (kqueue
	// gives no event for it on darwin, which readPipe does not wait for).
	t.Run("WriterClosedBefore", func(t *testing.T) {
		_, w, path := pipe(t)
		half := len(caPEM) / 2
		for _, part := range [][]byte{caPEM[:half], caPEM[half:]} {
			if _, err := w.Write(part); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+path, func() {}); err != nil {
			t.Errorf("ParseTLS with %s, a pipe written and closed: %v", path, err)
		}
	})

	// A pipe whose writer closed it without writing (an empty <(cmd)) reads
	// as a FIFO with no writer yet: the error, at pipeWait, says both.
	t.Run("ClosedEmpty", func(t *testing.T) {
		_, w, path := pipe(t)
		w.Close()
		err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+path, func() {})
		want := "tls_ca_file " + path + ": nothing to read after 200ms (a pipe with no writer, or one its writer closed empty?)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTLS with a pipe closed empty: error %v, want one with %q", err, want)
		}
	})

	// A writer that writes the CA but never closes its end: the file has
	// no end, and the read stops at pipeWait.
	t.Run("WriterNeverCloses", func(t *testing.T) {
		_, w, path := pipe(t)
		defer w.Close()
		if _, err := w.Write(caPEM); err != nil {
			t.Fatal(err)
		}
		err := parseTLSBounded(t, "rediss://h:1?tls_ca_file="+path, func() { w.Close() })
		want := "tls_ca_file " + path + ": no end of file after 200ms (" + strconv.Itoa(len(caPEM)) + " bytes read)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTLS with a pipe whose writer never closes: error %v, want one with %q", err, want)
		}
	})
}

// pipe returns a pipe, its read end closed at the end of the test, and the
// /dev/fd path of its read end, as bash's process substitution gives one.
func pipe(t *testing.T) (r, w *os.File, path string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, w, "/dev/fd/" + strconv.Itoa(int(r.Fd()))
}
