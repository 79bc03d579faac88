package goredis

import (
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/internal/drivernode"
)

// laneIdle is how long the lane may stay unused before the next lone call
// gives its connection back to the pool instead of using it: the pool
// checks an idle connection's health before it lends it (a server that
// closed it is then not sent a command), the lane does not.
const laneIdle = time.Second

// lane is a connection of a node from Open, kept out of the pool for the
// calls sent alone (see batch.Batcher): a *redis.Conn over one pooled
// connection, which one call at a time takes with a swap. A lone call on it
// skips the pool's work for every command (its lock, and the health check,
// a system call and three allocations), as a caller holding one connection
// does. A call that finds it taken (another lone call is on it) or missing
// goes through the pool. A call that fails (a timeout, a broken connection,
// its context ended, an error reply) may leave a reply unread on it, or the
// connection marked bad by go-redis: the lane is then closed, which gives a
// sound connection back to the pool and removes a bad one, and the next
// lone call makes another.
type lane struct {
	conn *redis.Conn
	used time.Time // when its last call ended
	sent bool      // a command went out on it: its connection is made
}

// lanes holds a node's lane: at most one exists at a time.
type lanes struct {
	client *redis.Client     // the node's own; nil: no lane (a cluster, a client from New)
	state  *drivernode.State // the node's: closed, lanes are closed
	idle   atomic.Pointer[lane]
	made   atomic.Bool // a lane exists, idle or taken
}

// take returns the lane for a lone call, making it if there is none, and
// whether it is fresh: no command went out on it yet (its first takes a
// connection from the pool, which may dial). It returns nil if another call has the lane, if the node
// has none, or if the lane was idle too long (it is closed: the call goes
// through the pool, which checks its connections).
func (ls *lanes) take(now time.Time) (l *lane, fresh bool) {
	if ls.client == nil {
		return nil, false
	}
	if l = ls.idle.Swap(nil); l != nil {
		if now.Sub(l.used) < laneIdle {
			return l, !l.sent
		}
		ls.drop(l)
		return nil, false
	}
	if !ls.made.CompareAndSwap(false, true) {
		return nil, false // taken by another call
	}
	return &lane{conn: ls.client.Conn()}, true
}

// give returns l after a call that sent a command on it (sent) and ended
// with err, or one that sent nothing, unless the node is closed or the call
// failed: l is then closed. A failure may have left a reply unread on the
// connection, and go-redis may have marked the connection bad (a timeout, a
// broken connection, and also some error replies, such as READONLY, after
// which every later command on the lane would fail): the next lone call
// takes another connection from the pool.
func (ls *lanes) give(l *lane, sent bool, err error) {
	if err != nil {
		ls.drop(l)
		return
	}
	l.sent = l.sent || sent
	l.used = time.Now()
	ls.idle.Store(l)
	if ls.state.Err() != nil { // Close may have looked before the Store
		if l := ls.idle.Swap(nil); l != nil {
			ls.drop(l)
		}
	}
}

// drop closes l, which the caller took, so that another can be made.
func (ls *lanes) drop(l *lane) {
	_ = l.conn.Close() // gives a sound connection back to the pool, removes a broken one
	ls.made.Store(false)
}

// close closes the idle lane, if any. A lane taken by a call is closed by
// its give, which sees the node closed.
func (ls *lanes) close() {
	if l := ls.idle.Swap(nil); l != nil {
		ls.drop(l)
	}
}
