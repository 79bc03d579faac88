package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// restartAttempts and restartRetryDelay bound how long Restart waits for its
// port when the kernel has not let go of it yet.
const (
	restartAttempts   = 20
	restartRetryDelay = 50 * time.Millisecond
)

// Restart kills the server if it is running (SIGKILL, as in a crash) and
// starts it again at once on the same port, with the same configuration and
// directory, then waits until it answers PING; ctx bounds the start. What the
// new process remembers is what the configuration made durable: by default
// (no RDB snapshots, no AOF) it starts empty, as a crashed node without
// persistence does; with WithConfig("appendonly", "yes") and
// WithConfig("appendfsync", "always") it reloads every write it acknowledged
// before the crash, keys' expiry times included. Restart also starts a server
// that was killed with [Server.Kill]. It fails on a closed server.
func (s *Server) Restart(ctx context.Context) error { return s.RestartAfter(ctx, 0) }

// RestartAfter is [Server.Restart] with the server kept down for down before it
// starts again: the delayed restart that keeps a node without persistence
// from granting a lock it forgot, when down is longer than the longest TTL.
// The server is killed at once; RestartAfter returns once it answers again.
// While it is down, its port (and a cluster node's bus port) is held by a
// listener that resets every connection at once, so that no other server or
// proxy of the test binary can take the port meanwhile; to a client the
// server is as unreachable as a dead one. If ctx ends or the server is
// closed during the wait, RestartAfter returns then, the server stays down
// and the error says so.
func (s *Server) RestartAfter(ctx context.Context, down time.Duration) error {
	if ctx == nil { // before the kill: the server stays up
		return errNilContext
	}
	if err := s.Kill(); err != nil { // Kill holds the port while the server is down
		return err
	}
	if down > 0 {
		t := time.NewTimer(down)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redistest: restart server %s: %w (the server stays down)", s.addr, ctx.Err())
		case <-s.closing:
			t.Stop()
			return fmt.Errorf("redistest: restart server %s: server is closed (it stays down)", s.addr)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		switch {
		case s.closed:
			return fmt.Errorf("redistest: restart server %s: server is closed", s.addr)
		case s.proc != nil && !s.proc.exited():
			return nil // restarted meanwhile by another call
		}
		err := s.launchLocked(ctx)
		if err == nil || !errors.Is(err, errPortInUse) || attempt == restartAttempts {
			return err
		}
		// The port is still held, for instance by a connection the kernel has
		// not finished closing: wait a little, without holding the lock.
		s.mu.Unlock()
		t := time.NewTimer(restartRetryDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			return fmt.Errorf("redistest: restart server %s: %w (last attempt: %w)", s.addr, ctx.Err(), err)
		}
	}
}

// Running reports whether the server's process is running (it may be
// paused): false after [Server.Kill], during the down time of
// [Server.RestartAfter], and after [Server.Close].
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// holdPorts listens on each of addrs and resets every connection at once
// (SO_LINGER 0), so that the kernel hands the ports to no one else, until
// release is called. It is best effort: an address that cannot be bound is
// not held.
func holdPorts(addrs ...string) (release func()) {
	var (
		ls []net.Listener
		wg sync.WaitGroup
	)
	for _, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ls = append(ls, l)
		wg.Go(func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				c.Close()
			}
		})
	}
	return func() {
		for _, l := range ls {
			l.Close()
		}
		wg.Wait()
	}
}
