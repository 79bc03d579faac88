package pubsub_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/pubsub"
)

// A hub whose new connections are dialed but then fail at once (here the
// server refuses the SSUBSCRIBE that subscribes its channels again, as Redis
// does with NOPERM once an ACL no longer allows the channel) must back off as
// it does while dials fail: relink's doubling intervals restart at
// relinkFirst after every successful dial, so such a hub dials a new
// connection every relinkFirst (50ms: 20 connections a second per node) for
// as long as it has subscribers.
func TestRelinkBacksOffWhenConnectionsFailAtOnce(t *testing.T) {
	d := newDialer()
	var dials atomic.Int32
	var broken atomic.Bool
	dial := func(ctx context.Context) (pubsub.Conn, error) {
		dials.Add(1)
		if broken.Load() {
			c := newFakeConn()
			c.refuseAlways = errors.New("NOPERM this user has no permissions to access one of the channels used as arguments")
			go func() { // the hub's SUBSCRIBE is read, and refused
				for {
					select {
					case <-c.cmds:
					case <-c.closed:
						return
					}
				}
			}()
			return c, nil
		}
		return d.dial(ctx)
	}
	h := newRelinkingHubWith(t, dial, 10*time.Millisecond)
	conn := newFakeConn()
	d.conns <- conn
	done := subscribe(t.Context(), h, "kept", make(chan struct{}, 1))
	conn.expect(t, "SUBSCRIBE kept")
	conn.emit(t, pubsub.Subscribed, "kept")
	r := wait(t, done)
	require.NoError(t, r.err)

	broken.Store(true)
	before := dials.Load()
	conn.Close()
	time.Sleep(1500 * time.Millisecond)
	n := dials.Load() - before
	// Doubling from 10ms up to 1s: about 8 dials in 1.5s.
	require.LessOrEqual(t, n, int32(20), "the hub dialed %d connections in 1.5s: it does not back off when each new connection fails at once", n)
	r.cancel()
}
