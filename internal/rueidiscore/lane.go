package rueidiscore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/internal/connalive"
)

// laneRetry is how long a node waits before it makes a lane again after an
// attempt failed.
const laneRetry = time.Second

// A lane is a second client of a node made by Open for a single server, on a
// connection of its own, which never pipelines: a call on it writes its
// command and reads the reply on the caller's goroutine, as the library does
// for a lone call when it is not told to always pipeline, without the two
// hand-offs to the client's goroutines that the node's pipelining client
// costs. It carries one call at a time, taken with a CompareAndSwap: a call
// that finds it busy goes through the pipelining client, so that no call ever
// waits behind another's reply. And only a call due within batch.CancelLag
// takes it (see node.call): its read ends at that deadline, which a
// cancellation does not interrupt, so a canceled call on the lane returns at
// most that late, as the goredis and redigo drivers' lone calls do. A node
// whose calls have longer deadlines (a longer node timeout) never makes one.
//
// The lane's client sends no PING of its own (its dialer's KeepAlive is
// negative): the library would send it from a timer, and a call could then
// wait behind it. A connection the server closed while the lane was idle is
// found before a call takes it (see alive); one that failed under a call (a
// timeout) is closed by the library. Either way the lane is dropped, and made
// again, in the background, after a call through the pipelining client has
// succeeded.
type lane[C closer] struct {
	client C
	conn   net.Conn
	busy   atomic.Bool
	used   atomic.Int64 // when a call last took it (Unix nanoseconds)
	ctx    laneContext  // the context of the call that has it, if it needs one; reused
}

// laneCooldown is how long after a call met another in flight on a node (or
// its lane taken) the node's calls go through the pipelining client only:
// under load the calls are pipelined together, and one sent apart, on the
// lane, would cost its own writes and reads on the client and on the server
// (a quarter of the throughput of 64 lockers on five nodes, when every
// pause in a node's pipeline let one call take the lane).
const laneCooldown = 10 * time.Millisecond

// laneIdle is how long a lane may stay idle before a call checks that its
// connection is alive (a system call) before taking it: long enough that
// calls in a row pay nothing, short enough to see a connection that a
// server's idle timeout, a restart or a CLIENT KILL closed between two of
// them. A connection closed within that time of the last call makes the next
// one fail, as it does a call in flight when it is closed.
const laneIdle = time.Second

// A laneContext is a call's context with an earlier deadline, for a call on
// a lane: the library reads a lone call's reply on the caller's goroutine
// with that deadline set on the connection, which ends the read, so the
// deadline costs no timer. Only a lane's client, which never pipelines, is
// given one: a pipelined call would wait for Done, which closes only with
// the parent's.
type laneContext struct {
	context.Context
	deadline time.Time
}

// Deadline returns the call's deadline.
func (c *laneContext) Deadline() (time.Time, bool) { return c.deadline, true }

// close closes the lane's connection, which ends a read in progress at once,
// then its client.
func (l *lane[C]) close() {
	l.conn.Close()
	l.client.Close()
}

// takeLane returns s's lane, taken at now, or nil if there is none or it is
// busy (busy is then set). A lane idle for laneIdle whose connection is no
// longer alive is dropped.
func (n *node[C, D, R, L]) takeLane(s *state[C], now time.Time) (l *lane[C], busy bool) {
	l = s.lane.Load()
	if l == nil {
		return nil, false
	}
	if !l.busy.CompareAndSwap(false, true) {
		return nil, true
	}
	if now.UnixNano()-l.used.Load() >= int64(laneIdle) && !connalive.Alive(l.conn) {
		n.dropLane(s, l)
		return nil, false
	}
	return l, false
}

// dropLane drops l, s's lane, and closes it.
func (n *node[C, D, R, L]) dropLane(s *state[C], l *lane[C]) {
	if s.lane.CompareAndSwap(l, nil) {
		l.close()
	}
}

// startLane starts making a lane for s in the background, unless s has one,
// one is being made, an attempt failed less than laneRetry ago, or the node
// cannot have one: a node over a caller's client (New) or over a cluster.
func (n *node[C, D, R, L]) startLane(s *state[C]) {
	if !n.owned || n.cluster || s.lane.Load() != nil || time.Now().UnixNano() < s.laneAfter.Load() ||
		!s.laning.CompareAndSwap(false, true) {
		return
	}
	go n.makeLane(s)
}

// makeLane makes a lane for s, and gives it to s unless s is no longer the
// node's state (its client was replaced, or the node closed). Its connection
// is made as the client's are (see dial): Close aborts it.
func (n *node[C, D, R, L]) makeLane(s *state[C]) {
	defer s.laning.Store(false)
	l, err := n.newLane()
	n.mu.Lock()
	kept := err == nil && n.cur.Load() == s
	if kept {
		s.lane.Store(l)
	}
	n.mu.Unlock()
	if !kept {
		s.laneAfter.Store(time.Now().Add(laneRetry).UnixNano())
		if l != nil {
			l.close()
		}
	}
}

// errLaneConns is the error of a lane whose client made other than one
// connection.
var errLaneConns = errors.New("the lane's client made other than one connection")

// newLane creates the client of a lane.
func (n *node[C, D, R, L]) newLane() (*lane[C], error) {
	var none C
	a := &attempt[C]{}
	opt := n.opt
	opt.Lane = true
	opt.Dialer.KeepAlive = -1 // no PING from a timer
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
		return n.dial(ctx, a, addr, d, tc)
	}
	c, err := n.lib.NewClient(opt)
	if err != nil && c != none {
		c.Close()
		c = none
	}
	n.mu.Lock()
	a.created = true
	stops, conns := a.stops, a.conns
	a.stops = nil
	n.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: lane: %w", n.lib.Name, err)
	case len(conns) != 1:
		c.Close()
		for _, conn := range conns {
			conn.Close()
		}
		return nil, fmt.Errorf("%s: %w", n.lib.Name, errLaneConns)
	}
	l := &lane[C]{client: c, conn: conns[0].Conn}
	l.used.Store(time.Now().UnixNano())
	return l, nil
}
