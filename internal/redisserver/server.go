package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// readyTimeout bounds how long Start waits for a server to answer PING.
const readyTimeout = 10 * time.Second

// startAttempts is how many ports Start tries when the port it picked is
// taken before redis-server binds it.
const startAttempts = 5

// dirPrefix starts the name of every server directory. It differs from the
// "redistest-" of the directories made before they were locked (see
// lockDir), which removeStaleDirs cannot tell from one in use.
const dirPrefix = "redistest-server-"

// sweepOnce removes, at the first start of this process, the server
// directories that dead processes left behind.
var sweepOnce sync.Once

// errPortInUse marks a start that failed because the port was taken.
var errPortInUse = errors.New("port already in use")

// Server is a redis-server process listening on 127.0.0.1 (or ::1), started by
// [Start]. Its methods are safe for concurrent
// use.
type Server struct {
	// Fixed for the life of the Server, so that it could be started again on
	// the same port with the same configuration and directory.
	bin  string // redis-server binary
	cfg  config
	port int
	addr string   // "127.0.0.1:port"
	dir  string   // --dir; also holds the log files
	lock *os.File // holds dir locked until Close; nil where unsupported
	// closing is closed by Close, ending RestartAfter's down time; nil in a
	// Server made without Start, on which nothing waits for it.
	closing chan struct{}

	mu       sync.Mutex
	proc     *process // the running process; nil once killed or closed
	paused   bool     // SIGSTOP sent, SIGCONT not yet
	release  func()   // ends the hold on the port of a killed server; nil if none
	closed   bool
	closeErr error
}

// Start starts a redis-server on a free port of 127.0.0.1 (of ::1 with
// [WithIPv6]) and waits until it
// answers PING. ctx bounds only the start, which also gives up after 10s; the
// server runs until [Server.Close]. It returns an error wrapping
// [ErrNotInstalled] if the redis-server binary cannot be found, and an error
// including the end of the server's log if it does not start.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	var cfg config
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	bin, err := findServer()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := tryStart(ctx, bin, cfg)
		if err == nil || !errors.Is(err, errPortInUse) || attempt == startAttempts {
			return s, err
		}
	}
}

// tryStart starts a server on a new free port and directory.
func tryStart(ctx context.Context, bin string, cfg config) (*Server, error) {
	port, err := freePort(cfg.host())
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(removeStaleDirs)
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("redistest: create server directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redistest: lock server directory: %w", err)
	}
	s := &Server{
		bin:     bin,
		cfg:     cfg,
		port:    port,
		addr:    net.JoinHostPort(cfg.host(), strconv.Itoa(port)),
		dir:     dir,
		lock:    lock,
		closing: make(chan struct{}),
	}
	s.mu.Lock()
	err = s.launchLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dir)
		_ = lock.Close() // nil where unsupported: Close then does nothing
		return nil, err
	}
	return s, nil
}

// launchLocked starts the server's process on its port and directory and
// waits until it is ready. On failure no process is left running.
func (s *Server) launchLocked(ctx context.Context) error {
	s.releasePortLocked()
	args := s.cfg.args(s.port, s.dir, filepath.Join(s.dir, logFileName))
	p, err := spawn(s.bin, args, s.dir)
	if err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	if err := s.waitReady(ctx, p); err != nil {
		_ = p.kill()
		return fmt.Errorf("redistest: start %s on %s: %w%s", s.bin, s.addr, err, logTail(s.dir))
	}
	s.proc, s.paused = p, false
	return nil
}

// waitReady polls the server with PING until it answers, it exits, ctx is
// done or readyTimeout passes.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	exited := func() error {
		err := fmt.Errorf("redis-server exited before it was ready (%v)", p.waitErr)
		if strings.Contains(logTail(s.dir), "already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return err
	}
	delay := 2 * time.Millisecond
	var lastErr error
	for {
		if p.exited() {
			return exited()
		}
		if lastErr = s.probe(ctx, p); lastErr == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-p.done:
			t.Stop()
			return exited()
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("not ready: %w (last attempt: %v)", ctx.Err(), lastErr)
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// probe returns nil if the server answers PING and is our process, not
// another server that took the port first.
func (s *Server) probe(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := do(ctx, s.addr, s.cfg.password, s.cfg.clientTLS(), []string{"PING"}); err != nil {
		return err
	}
	v, err := do(ctx, s.addr, s.cfg.password, s.cfg.clientTLS(), []string{"INFO", "server"})
	if err != nil {
		var rerr RedisError
		if errors.As(err, &rerr) {
			return nil // INFO renamed or disabled: trust the PING
		}
		return err
	}
	info, _ := v.(string)
	want := "process_id:" + strconv.Itoa(p.cmd.Process.Pid)
	for line := range strings.Lines(info) {
		if strings.HasPrefix(line, "process_id:") {
			if strings.TrimSpace(line) == want {
				return nil
			}
			return fmt.Errorf("port answered by another redis-server (%s)", strings.TrimSpace(line))
		}
	}
	return nil // no process_id field: trust the PING
}

// Addr returns the server's address, "127.0.0.1:PORT", or "[::1]:PORT" for a
// server started [WithIPv6].
func (s *Server) Addr() string { return s.addr }

// URL returns the server's address as a URL, "redis://127.0.0.1:PORT", or
// "redis://:PASSWORD@127.0.0.1:PORT" (the password escaped) if it has one.
// A server started [WithTLS] has a "rediss://" URL whose query parameters
// tls_ca_file, tls_cert_file and tls_key_file name its [Certs] files, as the
// drivers of this module accept it.
func (s *Server) URL() string {
	u := url.URL{Scheme: "redis", Host: s.addr}
	if s.cfg.password != "" {
		u.User = url.UserPassword("", s.cfg.password)
	}
	if c := s.Certs(); c != nil {
		u.Scheme = "rediss"
		u.RawQuery = url.Values{
			"tls_ca_file":   {c.CAFile},
			"tls_cert_file": {c.ClientCertFile},
			"tls_key_file":  {c.ClientKeyFile},
		}.Encode()
	}
	return u.String()
}

// Close stops the server (SIGCONT if paused, SIGTERM, then SIGKILL if it has
// not exited after a short grace), waits for it and removes its directory. It
// is idempotent: later calls return the first call's result.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	if s.closing != nil {
		close(s.closing)
	}
	s.releasePortLocked()
	var errs []error
	if s.proc != nil {
		if err := s.proc.stop(s.paused); err != nil {
			errs = append(errs, fmt.Errorf("redistest: stop server %s: %w", s.addr, err))
		}
		s.proc, s.paused = nil, false
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("redistest: remove server directory: %w", err))
	}
	_ = s.lock.Close() // nil where unsupported: Close then does nothing
	s.closeErr = errors.Join(errs...)
	return s.closeErr
}

// Kill kills the server with SIGKILL, as in a crash, and waits for it to
// exit. Its directory is kept until [Server.Close], which is still needed.
// Until the server is restarted or closed, its port (and a cluster node's bus
// port) is held by a listener that resets every connection at once: to a
// client the node is as unreachable as a dead one, and no other server of the
// test binary can take the port and answer in its place. Killing a server
// that is not running does nothing.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := s.proc.kill(); err != nil {
		return fmt.Errorf("redistest: kill server %s: %w", s.addr, err)
	}
	s.proc, s.paused = nil, false
	held := []string{s.addr}
	if bus, ok := s.cfg.busPort(s.port); ok {
		// A cluster node's bus port too: another server taking it
		// meanwhile would make the restart fail.
		held = append(held, net.JoinHostPort(s.cfg.host(), strconv.Itoa(bus)))
	}
	s.release = holdPorts(held...)
	return nil
}

// releasePortLocked ends the hold Kill put on the port. s.mu is held.
func (s *Server) releasePortLocked() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

// Pause stops the server process with SIGSTOP: it keeps its port, and the
// kernel still accepts TCP connections, but it answers nothing until
// [Server.Resume]. Pause returns once the process is stopped; pausing a
// paused server does nothing, and pausing one that is not running (killed or
// closed) fails.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.runningLocked("pause"); err != nil {
		return err
	}
	if s.paused {
		return nil
	}
	if err := s.proc.signal(sigStop); err != nil {
		return fmt.Errorf("redistest: pause server %s: %w", s.addr, err)
	}
	s.paused = true
	if err := waitStopped(s.proc.cmd.Process.Pid); err != nil {
		return fmt.Errorf("redistest: pause server %s: %w", s.addr, err)
	}
	return nil
}

// Resume continues a server stopped by [Server.Pause] with SIGCONT; it then
// answers the commands that queued up meanwhile. Resuming a running server
// that is not paused does nothing; resuming one that is not running (killed
// or closed) fails.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.runningLocked("resume"); err != nil {
		return err
	}
	if !s.paused {
		return nil
	}
	if err := s.proc.signal(sigCont); err != nil {
		return fmt.Errorf("redistest: resume server %s: %w", s.addr, err)
	}
	s.paused = false
	return nil
}

// runningLocked returns an error unless the server's process is running.
func (s *Server) runningLocked(op string) error {
	switch {
	case !pauseSupported:
		return fmt.Errorf("redistest: %s server %s: not supported on this OS", op, s.addr)
	case s.closed:
		return fmt.Errorf("redistest: %s server %s: server is closed", op, s.addr)
	case s.proc == nil || s.proc.exited():
		return fmt.Errorf("redistest: %s server %s: server is not running", op, s.addr)
	}
	return nil
}
