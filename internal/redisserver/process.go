package redisserver

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-redlock/redlock/internal/deathsig"
)

// Names of the files a server keeps in its directory.
const (
	logFileName   = "redis.log"    // --logfile
	stdioFileName = "redis.stdout" // stdout and stderr: errors before the log file is open
)

// stopGrace is how long Close waits after SIGTERM before it sends SIGKILL.
const stopGrace = 3 * time.Second

// process is one run of redis-server.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // the exit status; read only after done is closed
}

// spawn starts bin with args, its stdout and stderr going to a file in dir.
func spawn(bin string, args []string, dir string) (*process, error) {
	out, err := os.OpenFile(filepath.Join(dir, stdioFileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	// Killed when this process dies, where the system can (Linux);
	// elsewhere Close must be called (redistest.NewServer arranges it).
	if err := deathsig.Start(cmd, syscall.SIGKILL); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig; it returns os.ErrProcessDone once the process has exited.
func (p *process) signal(sig os.Signal) error {
	if p.exited() {
		return os.ErrProcessDone
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits for the process to exit.
func (p *process) kill() error {
	if err := p.signal(os.Kill); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

// stop asks the process to shut down (SIGCONT first if it may be stopped,
// then SIGTERM), and kills it if it has not exited after stopGrace.
func (p *process) stop(paused bool) error {
	if paused {
		_ = p.signal(sigCont)
	}
	if err := p.signal(sigTerm); err != nil {
		return p.kill()
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return p.kill()
	}
}

// logTail returns the last lines redis-server wrote to its log file and to
// stdout/stderr in dir, for error messages.
func logTail(dir string) string {
	var b strings.Builder
	for _, name := range []string{stdioFileName, logFileName} {
		if t := fileTail(filepath.Join(dir, name), 20, 4096); t != "" {
			b.WriteString("\n--- " + name + " (tail) ---\n")
			b.WriteString(t)
		}
	}
	return b.String()
}

// fileTail returns at most the last lines lines and maxBytes bytes of a file,
// or "" if it cannot be read.
func fileTail(path string, lines int, maxBytes int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		if _, err := f.Seek(fi.Size()-maxBytes, io.SeekStart); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes))
	if err != nil {
		return ""
	}
	data = bytes.TrimRight(data, "\r\n")
	all := strings.Split(string(data), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
