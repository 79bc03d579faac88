package redigo

import (
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// brokenWriteConn is a redis.ConnWithTimeout that reads at once, with no
// reply, and whose writes fail as on a connection the server closed (EOF).
type brokenWriteConn struct{}

func (brokenWriteConn) Close() error                   { return nil }
func (brokenWriteConn) Err() error                     { return nil }
func (brokenWriteConn) Do(string, ...any) (any, error) { return nil, nil }
func (brokenWriteConn) Send(string, ...any) error      { return nil }
func (brokenWriteConn) Flush() error                   { return errEOFLike{} }
func (brokenWriteConn) Receive() (any, error)          { return nil, nil }

func (brokenWriteConn) DoWithTimeout(time.Duration, string, ...any) (any, error) { return nil, nil }
func (brokenWriteConn) ReceiveWithTimeout(time.Duration) (any, error)            { return nil, nil }

// A pub/sub connection is read by one goroutine (the hub's Receive) while
// another sends on it (Subscribe's Flush): the record that the server
// answered, which a read sets and a failed Flush reads, must be safe for
// that. It was a plain bool: the race detector reported that data race in
// TestRedisKeeperPausedNodeKeepsLocks/redigo (hub.run's Receive against
// hub.write's Subscribe, on a server paused then resumed), and here under
// -race. A Flush that fails once a reply was read is stale.
func TestReceiveWhileFlushing(t *testing.T) {
	c := &conn{Conn: brokenWriteConn{}}
	ps := pubSubConn{c}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			if _, err := c.ReceiveWithTimeout(0); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 100 {
		if err := ps.send("SSUBSCRIBE", []string{"ch"}); !errors.Is(err, io.EOF) {
			t.Fatalf("Subscribe's Flush: %v, want EOF", err)
		}
	}
	wg.Wait()
	if err := ps.send("SSUBSCRIBE", []string{"ch"}); !isStale(err) {
		t.Errorf("a failed Flush after a reply was read: %v, want it stale", err)
	}
}
