package rueidiscore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/clusterseeds"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/lastwords"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/internal/respguard"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/internal/untildone"
)

// Timeouts of the clients that Open creates. A call's context bounds it
// further; these bound the connection attempts that run in the background and
// the commands of a caller whose context has no deadline.
const (
	// dialTimeout bounds a TCP connect and, separately, the handshake (HELLO,
	// AUTH, SELECT) that follows it.
	dialTimeout = 5 * time.Second
	// connTimeout bounds the wait for a reply, and is how long an idle
	// connection may go without answering a PING before it is dropped.
	connTimeout = 5 * time.Second
	// probeTimeout is how long a server that did not answer a call by its
	// deadline has to answer a probe before its connection is broken (see
	// node.stalled).
	probeTimeout = 500 * time.Millisecond
)

// MaxInFlight is how many calls a node hands to its client at once (see
// Pending): enough to keep a server's pipeline full (64 lockers on five
// nodes never queue), few enough that a call's network timeout is not eaten
// by the others'. A call handed over waits for its reply in the library,
// whose goroutine delivers it; if the caller's goroutine runs only after the
// call's deadline, say behind thousands of goroutines woken at once by an
// unlock storm, the library may return the deadline's error although the
// reply came in time. Fewer calls in flight leave fewer exposed to such a
// delay: with 256, as many as the goredis and redigo drivers keep in flight
// (they read their replies in one goroutine per batch, which hands them
// over without such a race), the Scale case had a few hundred failed
// releases in some runs on a loaded machine; with 64, none in 18 runs of it
// (rueidis and valkeygo) and 11 storms of 20,000 unlocks. For a far server
// the gate scales it by the round trip (see batch.Gate): 64 per millisecond
// of the fastest answer, so that a server 40ms away is not held to 1,600
// commands a second, behind which the calls of one locker on five nodes
// queued without end (the Far case: thousands of queued calls, each on a
// goroutine).
const MaxInFlight = 64

// errRedial is what the dialer of a client made by Open answers when the
// library wants to reconnect in the goroutine of a call, where the wait would
// not be bounded by the call's context. The call then drops the client and
// waits for a new one as for the first (see node.dial and node.lost).
var errRedial = errors.New("connection lost")

// errCrossSlot is the error of a command for a cluster whose lock key and
// fencing counter are in different hash slots (driver.FenceKey never makes
// such a pair).
var errCrossSlot = errors.New("CROSSSLOT the fencing counter is not in the lock key's hash slot (see driver.FenceKey)")

// Open returns a node of lib for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS (see redisaddr.ParseTLS), or a Redis Cluster's
// "redis://host:port?cluster=true&addr=host:port..." (see
// redisaddr.ParseNode), with TLS over a copy of base when base is set. It
// does not connect: the node creates its client on first use, and
// again on the next use after an attempt failed. An attempt for a cluster
// address fails when the server is not cluster-enabled (the library would
// fall back to a client of one server): every call then fails with an error
// that names the address. The node owns its client and closes it on Close.
func Open[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], addr string, base *tls.Config) (driver.Node, error) {
	lib.init()
	a, tlsConfig, err := redisaddr.ParseNodeTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lib.Name, err)
	}
	closing, cancel := context.WithCancel(context.Background())
	n := &node[C, D, R, L]{Name: drivernode.Name(a.String()), lib: lib, owned: true, closing: closing, cancel: cancel,
		cluster: a.Cluster, gate: batch.NewGate(MaxInFlight)}
	n.Run = n.do
	n.opt = Options{
		Cluster:          a.Cluster,
		InitAddress:      a.Seeds,
		Username:         a.Username,
		Password:         a.Password,
		SelectDB:         a.DB,
		Dialer:           net.Dialer{Timeout: dialTimeout},
		TLSConfig:        tlsConfig,
		ConnWriteTimeout: connTimeout,
	}
	if a.Cluster {
		n.seeds = clusterseeds.New(a.Seeds, dialTimeout, n.askSlots)
	}
	n.startPubSub()
	return n, nil
}

// New returns a node of lib over c, a client the caller configured and keeps
// owning: Close on the node does not close c, but calls on the node after
// Close fail. The node's String is the address c connects to, or those of
// its servers when it has several (see clientName), without credentials. If
// c is nil, every call on the node, and Close, return an error.
func New[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], c C) driver.Node {
	lib.init()
	if drivernode.IsNil(c) {
		n := &node[C, D, R, L]{Name: drivernode.Name(lib.Name), lib: lib}
		n.Run = n.do
		n.cur.Store(&state[C]{err: lib.nilErr})
		return n
	}
	n := &node[C, D, R, L]{Name: clientName(lib, c), lib: lib, cluster: lib.Cluster(c), gate: batch.NewGate(MaxInFlight)}
	n.Run = n.do
	n.cur.Store(&state[C]{client: c})
	n.startPubSub()
	return n
}

// clientName names a node over c by what c connects to: its address, or,
// when c has several servers (a cluster client), their addresses, sorted,
// as "cluster(host:port,...)" (or "servers(...)" for a client of several
// servers that is not a cluster client; see drivernode.Servers), so that
// redlock.New rejects two nodes on the same servers and a program that keeps
// making nodes over fresh clients adds no metric series. A client that names
// no server is numbered: "NAME-N".
func clientName[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], c C) drivernode.Name {
	nodes := c.Nodes()
	if len(nodes) == 1 {
		for addr := range nodes {
			return drivernode.Name(redisaddr.Redact(addr))
		}
	}
	kind := "servers"
	if lib.Cluster(c) {
		kind = "cluster"
	}
	if name := drivernode.Servers(kind, slices.Collect(maps.Keys(nodes))); name != "" {
		return name
	}
	return lib.unnamed.Next()
}

// closer is a client: what a state holds.
type closer interface {
	comparable
	Close()
}

// state is what a node's calls use: its client, or else the error they
// return.
type state[C closer] struct {
	client C
	err    error
	conns  []dialedConn // the connections client's creation dialed (Open's nodes; see stalled)
	// redials are the connections that a cluster client of Open's dialed
	// after its creation, each until it is closed (see dial).
	redials connSet
	// probing holds the address of each server a probe runs on after a
	// call to client timed out, "" for all of client's (see stalled).
	probing sync.Map

	// The lane beside client, for a node made by Open for a single server
	// (see lane): nil while there is none; laning is set while one is
	// being made, and laneAfter is when one may be made again after an
	// attempt failed (Unix nanoseconds).
	lane      atomic.Pointer[lane[C]]
	laning    atomic.Bool
	laneAfter atomic.Int64
}

// closeLane closes s's lane, if it has one, for good: s's client is being
// closed.
func (s *state[C]) closeLane() {
	if l := s.lane.Swap(nil); l != nil {
		l.close()
	}
}

// close closes s's lane, the connections its client's creation dialed and
// then its client: the library's Close sends a PING on each connection and
// waits up to a second for its reply, which a stalled server never sends.
func (s *state[C]) close() {
	s.closeLane()
	for _, conn := range s.conns {
		conn.Close()
	}
	for _, conn := range s.redials.to("") {
		conn.Close()
	}
	s.client.Close()
}

// closed reports whether s is the state of a closed node.
func (s *state[C]) closed() bool { return errors.Is(s.err, driver.ErrClosed) }

// attempt is one creation of a client, shared by the callers that wait for
// it (or of a lane's client: see newLane).
type attempt[C closer] struct {
	done  chan struct{} // closed when state and err are set
	state *state[C]
	err   error

	// Guarded by node.mu.
	created bool          // NewClient returned: the client may dial no more, but a cluster's (see dial)
	made    *state[C]     // the state of the client created, once it is
	stops   []func() bool // deregister the close-on-Close hooks of its connections
	conns   []dialedConn  // the connections dialed
}

// A dialedConn is a connection that a client of Open's dialed, and the
// address it dialed.
type dialedConn struct {
	net.Conn
	addr string
}

// connSet is a set of connections, each of which leaves it when closed.
type connSet struct {
	mu    sync.Mutex
	conns map[*setConn]struct{}
}

// A setConn is a connection in a connSet.
type setConn struct {
	net.Conn
	addr string
	set  *connSet
	stop func() bool // stops the hook that closes it when the node closes
}

// add adds conn, dialed to addr, to s, and returns it as the connection to
// use, which closes when closing ends and leaves s when closed.
func (s *connSet) add(closing context.Context, conn net.Conn, addr string) net.Conn {
	c := &setConn{Conn: conn, addr: addr, set: s}
	// c.stop is set before c is in s, under s.mu: the stall probe and
	// Close take c from s (see to) and close it, which calls c.stop; the
	// hook's remove, which takes s.mu, comes after c is in s.
	s.mu.Lock()
	defer s.mu.Unlock()
	c.stop = context.AfterFunc(closing, func() {
		s.remove(c)
		conn.Close()
	})
	if s.conns == nil {
		s.conns = make(map[*setConn]struct{})
	}
	s.conns[c] = struct{}{}
	return c
}

func (s *connSet) remove(c *setConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close closes c and takes it out of its set.
func (c *setConn) Close() error {
	c.stop()
	c.set.remove(c)
	return c.Conn.Close()
}

// to returns the connections of s dialed to addr, or all of them if addr
// is "".
func (s *connSet) to(addr string) []net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var conns []net.Conn
	for c := range s.conns {
		if addr == "" || c.addr == addr {
			conns = append(conns, c)
		}
	}
	return conns
}

// node is a driver.Node over a client of lib. Its command methods send the
// commands of package rediscmd through do. Its String and Format (from
// drivernode.Name) show its address without credentials.
type node[C Client[C, D], D Dedicated, R Result, L any] struct {
	drivernode.Name
	rediscmd.Commands // the command methods, which send with do
	lib               *Library[C, D, R, L]
	owned             bool // created by Open: the node creates and closes its client

	// cur is nil while there is no client (Open: before the first one is
	// created, and after one lost its connection), then its state; Close
	// sets it to a state whose err is driver.ErrClosed, New(nil) to one
	// whose err is lib.nilErr. Calls read it with one atomic load.
	cur atomic.Pointer[state[C]]

	// For nodes made by Open.
	opt     Options
	seeds   *clusterseeds.Checker // refuses a cluster whose seeds are of two clusters; nil but on a cluster of several seeds
	closing context.Context       // done once Close is called
	cancel  context.CancelFunc

	// gate bounds the calls handed to the client at once (see Pending).
	gate *batch.Gate
	// due are the deadlines that calls with a short network timeout share.
	due batch.Deadlines
	// sending counts the calls in flight on the client, and crowded is
	// when a call last found others in flight (or the lane taken) plus
	// laneCooldown (Unix nanoseconds): a call takes the lane only when
	// there is none and that time has passed (see call).
	sending atomic.Int32
	crowded atomic.Int64

	cluster bool           // the client is a cluster client
	hub     *pubsub.Hub    // the release subscriptions of one server
	router  *pubsub.Router // those of a cluster (see optional.go)
	slots   slotMap        // a cluster's slots, for router

	mu         sync.Mutex
	pending    *attempt[C] // the client being created, if any
	dedicating int         // Dedicate calls in progress, which may dial (see dial)

}

// state returns the node's state, with its client, creating the client first
// if need be; or the error of a node that has none. The wait for the client
// is time on the network: a network timeout that ctx carries
// (driver.WithNetworkTimeout) bounds it, as ctx does.
func (n *node[C, D, R, L]) state(ctx context.Context) (*state[C], error) {
	if s := n.cur.Load(); s != nil {
		return s, s.err
	}
	if d, ok := driver.NetworkTimeout(ctx); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return n.connect(ctx)
}

// client returns the node's client, creating it first if need be.
func (n *node[C, D, R, L]) client(ctx context.Context) (C, error) {
	s, err := n.state(ctx)
	if err != nil {
		var none C
		return none, err
	}
	return s.client, nil
}

// connect waits, as long as ctx allows, for the client being created, and
// starts creating it if no one is.
func (n *node[C, D, R, L]) connect(ctx context.Context) (*state[C], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	if s := n.cur.Load(); s != nil {
		n.mu.Unlock()
		return s, s.err
	}
	a := n.pending
	if a == nil {
		a = &attempt[C]{done: make(chan struct{})}
		n.pending = a
		go n.create(a)
	}
	n.mu.Unlock()
	select {
	case <-a.done:
		return a.state, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errConnecting, ctx.Err())
	}
}

// errClusterDisabled is the reply of a server that is not cluster-enabled to
// CLUSTER SLOTS, which the library drops as it falls back to a client of one
// server (see create): kept in the error of every call of a cluster node over
// such a server, so that driver.PermanentCode finds it, as it finds the
// reply that the goredis driver's calls get. Only a restart with
// cluster-enabled yes undoes it.
var errClusterDisabled = errors.New("ERR This instance has cluster support disabled")

// errConnecting is in the error of a call whose context ended while the
// node's client was being created (a seed, or on a cluster a primary, had not
// answered yet: see create), which do names as any failed call: "rueidis:
// SET NX: slot 1234: connect: still connecting: context deadline exceeded".
var errConnecting = errors.New("connect: still connecting")

// create creates the client for a, and makes it the node's client unless the
// node was closed meanwhile, in which case it closes it.
func (n *node[C, D, R, L]) create(a *attempt[C]) {
	var none C
	opt := n.opt
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
		return n.dial(ctx, a, addr, d, tc)
	}
	// The seeds first: the library reads the slot map only from a cluster
	// that every seed that answers is a node of (see clusterseeds).
	var c C
	err := n.seeds.Check(n.closing)
	if err == nil {
		c, err = n.lib.NewClient(opt)
	}
	if err == nil && n.cluster && !n.lib.Cluster(c) {
		// The library falls back to a client of one server when its one
		// seed answers CLUSTER SLOTS with an error: a node that calls it
		// a cluster would send CLUSTER NODES (Identity) and route
		// channels by a slot map it cannot read. Its calls fail instead,
		// as the goredis driver's do ("cluster support disabled").
		err = fmt.Errorf("%s: the address says cluster=true, but the server is not cluster-enabled: %w", n.Name, errClusterDisabled)
	}
	if err == nil && n.cluster {
		err = n.warm(c)
	}
	if err != nil && c != none {
		c.Close() // ForceSingleClient returns a client even when it failed to connect
		c = none
	}
	var made *state[C]
	n.mu.Lock()
	n.pending = nil
	a.created = true
	stops := a.stops
	a.stops = nil
	s := n.cur.Load()
	closed := s != nil && s.closed()
	if err == nil && !closed {
		made = &state[C]{client: c, conns: a.conns}
		a.made = made
		n.cur.Store(made)
	}
	n.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	switch {
	case closed:
		if c != none {
			c.Close()
		}
		err = driver.ErrClosed
	case err != nil:
		err = fmt.Errorf("%s: connect: %w", n.lib.Name, err)
	}
	a.state, a.err = made, err
	close(a.done)
}

// warm connects the client of a cluster to every node it knows, while it is
// being created and may dial (see dial): the library dials a node on its
// first command, which would otherwise be a call's. It then reads the slot
// map (CLUSTER SLOTS) from a node that answered, for the release
// subscriptions (see route) and the stall probe's choice of connections to
// break (see stalled), read again after the router's refresh. Nodes that
// do not answer fail the creation only if none answered CLUSTER SLOTS: once
// the map is read, a primary down or hung fails its own shard's calls alone,
// and a replica (which the node never sends a command) nothing.
func (n *node[C, D, R, L]) warm(c C) error {
	ctx, cancel := context.WithTimeout(n.closing, dialTimeout)
	defer cancel() // ends the PINGs not waited for (a hung replica's)
	type pinged struct {
		nc   C
		addr string
		err  error
	}
	nodes := c.Nodes()
	results := make(chan pinged, len(nodes)) // buffered: no PING waits for warm
	for addr, nc := range nodes {
		go func() {
			_, err := n.lib.Do(ctx, nc, "PING").ToAny()
			results <- pinged{nc, addr, err}
		}()
	}
	// The slot map is read from the first node that answers, with a bound
	// of its own, so that warm then waits for the primaries' PINGs alone,
	// not for a replica that hangs.
	var (
		failed   = make(map[string]error)
		answered = make(map[string]bool)
		ranges   []slotRange
		err      = errors.New("no node answered")
	)
	take := func() pinged {
		r := <-results // every PING ends by ctx's deadline
		answered[r.addr] = true
		if r.err != nil {
			failed[r.addr] = r.err
		}
		return r
	}
	for len(answered) < len(nodes) && ranges == nil {
		if r := take(); r.err == nil {
			rctx, rcancel := context.WithTimeout(n.closing, dialTimeout)
			ranges, err = n.readSlots(rctx, []namedNode[C]{{r.addr, r.nc}})
			rcancel()
		}
	}
	if ranges == nil {
		n.slots.reset(ctx) // route reads it
		if len(failed) > 0 {
			return errors.Join(err, joinFailed(failed))
		}
		return nil
	}
	n.slots.set(ranges)
	// The primaries' PINGs connect the client to them, but one that fails,
	// or does not answer within probeTimeout, neither fails the creation nor
	// holds it up: its shard's calls dial it again (see dial), and fail by
	// their contexts while it does not answer; the other shards' work.
	wait := time.NewTimer(probeTimeout)
	defer wait.Stop()
	for len(answered) < len(nodes) && slices.ContainsFunc(ranges, func(r slotRange) bool { return !answered[r.addr] }) {
		select {
		case r := <-results:
			answered[r.addr] = true
		case <-wait.C:
			return nil
		}
	}
	return nil
}

// joinFailed joins the errors of the nodes that failed to answer warm's
// PING.
func joinFailed(failed map[string]error) error {
	var errs []error
	for addr, err := range failed {
		errs = append(errs, fmt.Errorf("%s: %w", redisaddr.Redact(addr), err))
	}
	return errors.Join(errs...)
}

// readSlots reads the slot map with CLUSTER SLOTS from the first of nodes
// that answers (see askAny).
func (n *node[C, D, R, L]) readSlots(ctx context.Context, nodes []namedNode[C]) ([]slotRange, error) {
	reply, from, err := n.askAny(ctx, nodes, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	ranges, err := parseSlots(reply, from)
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	return ranges, nil
}

// askAny sends a command about the whole cluster (CLUSTER SLOTS, CLUSTER
// NODES) to nodes in turn until one answers, and returns its reply and
// address. Sent through the cluster client, it would go to any one node the
// client knows, a dead or hung replica included. Every node but the last
// gets at most probeTimeout: one that hangs does not hold the question up,
// also under a node of New, whose client may hold a command beyond its
// context (see bounded).
func (n *node[C, D, R, L]) askAny(ctx context.Context, nodes []namedNode[C], args ...string) (any, string, error) {
	var errs []error
	for i, nn := range nodes {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if i < len(nodes)-1 {
			actx, cancel = context.WithTimeout(ctx, probeTimeout)
		}
		v, err := n.bounded(actx, func() (any, error) { return n.lib.Do(actx, nn.c, args...).ToAny() })
		cancel()
		if err == nil {
			return v, nn.addr, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", redisaddr.Redact(nn.addr), err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, "", errors.New("no node of the cluster is known")
	}
	return nil, "", errors.Join(errs...)
}

// A namedNode is the client of one node of a cluster, and its address.
type namedNode[C any] struct {
	addr string
	c    C
}

// nodesOf returns the clients of the nodes c knows: first those among
// primaries (those of the last slot map read; nil for none), then the others
// (replicas, mostly), each group in no set order.
func nodesOf[C Client[C, D], D Dedicated](c C, primaries map[string]bool) []namedNode[C] {
	var first, rest []namedNode[C]
	for addr, nc := range c.Nodes() {
		if primaries[addr] {
			first = append(first, namedNode[C]{addr, nc})
		} else {
			rest = append(rest, namedNode[C]{addr, nc})
		}
	}
	return append(first, rest...)
}

// dial connects to addr for the client that a creates, while NewClient runs,
// with TLS when tc is not nil. Close aborts the connect and the TLS
// handshake, and closes the connection, so that a creation stalled in its
// handshake ends when the node is closed.
//
// Once the client of a single server is created, dial refuses with
// errRedial: the library would reconnect and handshake in the goroutine of a
// call, and concurrent calls would wait for it beyond their contexts. The
// call drops the client instead, and a new one is created in the background
// (see lost). The exception is the connection of the pub/sub hub, which the
// library dials in the hub's own goroutine, in Dedicate (with a context that
// has no Done channel, unlike a call's): see dedicate.
//
// A cluster client dials on: a new client would have to connect to every
// shard again, and wait for each primary (see warm), so that one shard whose
// primary hangs would fail the calls of all. Its calls are bounded by their
// contexts on goroutines of their own instead (see bounded), and the
// connections it dials so (its pub/sub hubs' included) are closed by Close
// and by the stall probe of a call to their shard (see stalled).
func (n *node[C, D, R, L]) dial(ctx context.Context, a *attempt[C], addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	n.mu.Lock()
	created := a.created
	// A cluster client's dials after its creation are all tracked (see
	// below): its refresh of the slot map dials with a context that has no
	// Done channel too, like Dedicate, and may run during one, so the two
	// cannot be told apart; the stall probe may so close a hub's connection
	// to a stalled primary, which the router then dials again.
	dedicated := created && !n.cluster && n.dedicating > 0 && ctx.Done() == nil
	n.mu.Unlock()
	if created && !dedicated && !n.cluster {
		return nil, errRedial
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.closing, cancel)()
	// No connection to a seed of the cluster's that was not checked to be
	// of the same cluster as the others (see clusterseeds).
	if err := n.seeds.Admit(ctx, addr); err != nil {
		return nil, err
	}
	conn, err := dialConn(ctx, d, addr, tc)
	if err != nil {
		return nil, err
	}
	if dedicated {
		return pubsub.CloseOnDone(n.closing, conn), nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case a.created && !n.cluster:
		conn.Close()
		return nil, errRedial
	case a.created && a.made != nil:
		return a.made.redials.add(n.closing, conn, addr), nil
	case a.created: // a client whose creation failed, closed
		return pubsub.CloseOnDone(n.closing, conn), nil
	}
	a.stops = append(a.stops, context.AfterFunc(n.closing, func() { conn.Close() }))
	a.conns = append(a.conns, dialedConn{conn, addr})
	return conn, nil
}

// dialConn connects to addr, with TLS if tc is set, bounded by ctx, and
// guards the connection against replies that announce more than the process
// can hold (see package respguard); a server that refuses the connection
// with an error reply is named in the error (see package lastwords).
func dialConn(ctx context.Context, d *net.Dialer, addr string, tc *tls.Config) (net.Conn, error) {
	var (
		conn net.Conn
		err  error
	)
	if tc != nil {
		conn, err = tlsdial.Dial(ctx, d, "tcp", addr, tc)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	return lastwords.Wrap(respguard.Wrap(conn)), nil
}

// askSlots is the node's clusterseeds.Ask: CLUSTER SLOTS on a client of the
// one seed, with the node's credentials and TLS, made for the question and
// closed after it. ctx bounds it all: the connection is closed when ctx
// ends, which also ends the handshake's wait for a seed that hangs.
func (n *node[C, D, R, L]) askSlots(ctx context.Context, seed string) (any, error) {
	var none C
	opt := n.opt
	opt.Cluster, opt.InitAddress, opt.SelectDB = false, []string{seed}, 0
	opt.DialCtxFn = func(_ context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
		conn, err := dialConn(ctx, d, addr, tc)
		if err != nil {
			return nil, err
		}
		return pubsub.CloseOnDone(ctx, conn), nil
	}
	c, err := n.lib.NewClient(opt)
	if c != none {
		defer c.Close()
	}
	if err == nil {
		var reply any
		if reply, err = n.lib.Do(ctx, c, "CLUSTER", "SLOTS").ToAny(); err == nil {
			return reply, nil
		}
	}
	if n.lib.IsReply(err) {
		return nil, nil // an error reply: no map from this seed
	}
	return nil, err
}

// lost reports whether err says that the client of s lost its connection
// and wanted to redial (see dial). The command was not sent. It drops s, so
// that the next call creates a new client, unless another call did, and
// closes its client and its lane.
func (n *node[C, D, R, L]) lost(s *state[C], err error) bool {
	if err == nil || !errors.Is(err, errRedial) {
		return false
	}
	// Under n.mu, as makeLane gives s its lane: a lane made for s either
	// is s's by now, and closed here, or finds s dropped, and is closed by
	// makeLane; never kept by a state nobody closes.
	n.mu.Lock()
	dropped := n.cur.CompareAndSwap(s, nil)
	n.mu.Unlock()
	if dropped {
		s.close()
	}
	return true
}

// stalled is called when a call to c, a client of Open's, got no reply by
// its deadline: no goroutine of a call may outlive the node timeout. The
// library waits for the reply of a call that gave up in a goroutine of its
// own, as long as the connection lives (its ConnWriteTimeout, seconds),
// while every goroutine of a call must end with its deadline, or a small
// margin after, whatever the server does. So the server is probed on the
// same connection, whose replies come in order: a release of the call's key
// (which the server's ACL lets the client touch) with the empty value, which
// no lock has, so that it deletes nothing. If it answers within
// probeTimeout, the late reply has come too; if not, the connection is
// broken, its waiting goroutines end at once, the next call finds the client
// lost and a new one is created (see dial and lost), and the calls still
// waiting on it fail, as they would on a server that does not answer. For a
// cluster, only the connections to the primary that serves the key's slot
// (in the node's slot map; all of them when the map is not known, or names
// a primary the client has no connection to: see breakConns) are broken,
// and the client dials that primary again on its next call there (see
// dial): the other shards' calls go on. One probe runs at a time per server
// (per shard's primary on a cluster), and it ends by probeTimeout even when
// the library holds it, as it holds a cluster client's calls while it dials
// a connection again (see bounded): a connection whose handshake hangs is
// one of those it then breaks (see dial). A client of New's is the
// caller's: left alone.
func (n *node[C, D, R, L]) stalled(c C, key string) {
	s := n.cur.Load()
	if s == nil || s.client != c || !n.owned {
		return
	}
	addr := "" // every connection
	if n.cluster {
		addr, _ = n.slots.known(driver.HashSlot(key)) // "" when unknown
	}
	if _, running := s.probing.LoadOrStore(addr, struct{}{}); running {
		return
	}
	go func() {
		defer s.probing.Delete(addr)
		ctx, cancel := context.WithTimeout(n.closing, probeTimeout)
		defer cancel()
		cmd := rediscmd.Release(key, "")
		_, err := n.bounded(ctx, func() (any, error) { return n.send(ctx, c, &cmd).ToAny() })
		if err != nil && !n.lib.IsNil(err) && ctx.Err() != nil {
			s.breakConns(addr)
		}
	}()
}

// breakConns closes the connections of s's client to addr, or all of them
// if addr is "" or none is to addr: the node's slot map, which only the
// client's creation and the release subscriptions read, may name a primary
// that a failover replaced, to which the client has no connection left
// while the call waits on the promoted replica's.
func (s *state[C]) breakConns(addr string) {
	var conns []net.Conn
	for _, conn := range s.conns {
		if addr == "" || conn.addr == addr {
			conns = append(conns, conn)
		}
	}
	conns = append(conns, s.redials.to(addr)...)
	if len(conns) == 0 && addr != "" {
		s.breakConns("")
		return
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// Close closes the node, its pub/sub connection and, for a node made by Open,
// its client, including one still being created. Calls after Close, and those
// still waiting at the node's gate, which are never sent, return
// driver.ErrClosed. Close is idempotent. On a node from New(nil) it returns an
// error.
func (n *node[C, D, R, L]) Close() error {
	if s := n.cur.Load(); s != nil && s.err == n.lib.nilErr {
		return n.lib.nilErr
	}
	var none C
	n.mu.Lock()
	s := n.cur.Swap(&state[C]{err: driver.ErrClosed})
	n.mu.Unlock()
	n.pubSubClosing() // waiting Subscribes report ErrClosed, not the broken connection
	if n.cancel != nil {
		n.cancel() // before the hub's Close, which waits for its dial
	}
	n.pubSubClose()
	n.seeds.Close()
	if s != nil && s.client != none && n.owned {
		s.close()
	}
	return nil
}

// do sends cmd and reads its reply. An error matches ctx's when ctx is done,
// and names the command (and on a cluster its slot: see onShard) unless
// there was no client to send it.
func (n *node[C, D, R, L]) do(ctx context.Context, cmd rediscmd.Cmd) (rediscmd.Result, error) {
	if err := n.seeds.Err(); err != nil { // a refusal found after the client was created: see clusterseeds.Checker.Admit
		return rediscmd.Result{}, cmd.Failed(ctx, n.lib.Name, err)
	}
	if n.cluster && cmd.FenceKey != "" && driver.HashSlot(cmd.FenceKey) != driver.HashSlot(cmd.Key) {
		// The library panics on a command whose keys are in several slots.
		return rediscmd.Result{}, cmd.Failed(ctx, n.lib.Name, errCrossSlot)
	}
	// again: a call of Open's that failed because the server had closed
	// or reset the connection (see connalive.Broken) goes again, at once,
	// within ctx and its first send's network deadline (once per
	// connection: see below), as rediscmd.Cmd.Again says (a SET NX as
	// driver.SetNXAgainScript, which counts the key its first send may have
	// set as set; the scripts as they are). The library finds out that the
	// server closed its connection (a restart, CLIENT KILL, its idle
	// timeout) only when it reads the end of it, which a call sent just then
	// fails with: without the repeat, a release right after the servers
	// dropped the connections failed on every node, and the key stayed for
	// its TTL when the Client closed next, and a TryLock failed. The repeat
	// goes on a new connection (the client asks to redial: see lost and
	// dial): a server that stays down fails it at the dial, within ctx. A repeated release that deletes nothing is no answer
	// (rediscmd.Cmd.Repeated). A client of New's is the caller's, with its
	// own retries, and a cluster client resends nothing (see README,
	// clusters): both left alone.
	//
	// The repeat is once per connection: a node's lane and its client each
	// have one (see lane), and the server closes both at once. A call that
	// failed on the lane goes again through the client, whose reader may
	// not have read the end of its connection yet, so that the repeat is
	// written on it and fails the same way (about a lone call in four right after a
	// CLIENT KILL, Reconnects/RightAfterKillNodeTimeout): it then goes
	// again once more, and the client, which has read the end by then, asks
	// to redial (see lost). Two repeats at most.
	again := n.direct()
	var brokeOn [2]bool // a repeat followed a send that failed so: [1] on the lane, [0] on the client
	orig := cmd         // what the caller asked for: its name in errors
	var first error     // the error of the send that the repeats follow
	for retry := true; ; {
		s, err := n.state(ctx)
		if errors.Is(err, errConnecting) {
			return rediscmd.Result{}, orig.Failed(ctx, n.lib.Name, n.onShard(cmd.Key, err))
		}
		if err != nil {
			return rediscmd.Result{}, driver.ContextError(ctx, err)
		}
		reply, laned, due, err := n.call(ctx, s, &cmd)
		if retry && n.lost(s, err) {
			retry = false
			continue
		}
		if err != nil && again && !brokeOn[b2i(laned)] && connalive.Broken(err) && ctx.Err() == nil {
			brokeOn[b2i(laned)], retry = true, true // the repeat may find the client lost
			if first == nil {
				first = err
				if _, hasNet := driver.NetworkTimeout(ctx); hasNet && !due.IsZero() {
					// The repeats end by the first send's network
					// deadline, as one call (driver.Queuer): each
					// would otherwise have a network timeout of its
					// own, its connection's creation too, and a lone
					// call due in the node timeout took more than
					// twice that.
					var cancel context.CancelFunc
					ctx, cancel = context.WithDeadline(ctx, due)
					defer cancel()
				}
			}
			cmd = orig.Again()
			continue
		}
		if err != nil && !n.owned && n.clientClosed(ctx, s.client, err) {
			// The user closed the client under a node of New: it never
			// opens again, as a closed node does not.
			err = fmt.Errorf("%w: %w", driver.ErrClosed, err)
		}
		if n.lib.IsNil(err) {
			reply, err = nil, nil // SET NX: the key exists
		}
		var r rediscmd.Result
		if err == nil {
			r, err = cmd.Parse(reply)
		}
		if first != nil {
			r, err = orig.Repeated(r, err, first)
		}
		if err != nil {
			return rediscmd.Result{}, orig.Failed(ctx, n.lib.Name, n.onShard(cmd.Key, err))
		}
		return r, nil
	}
}

// b2i is 1 for true, 0 for false: an index.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// onShard returns err, which a call on key failed with, naming on a cluster
// node the key's slot and, when the node's slot map is known, the primary
// that serves it there (see rediscmd.OnShard; the map is read when the client
// is created, and by the release subscriptions). On a node of one server, a
// client that follows no redirection, it marks a cluster's redirection as
// one that no retry fixes (see driver.OneServerError).
func (n *node[C, D, R, L]) onShard(key string, err error) error {
	if !n.cluster {
		return driver.OneServerError(err)
	}
	addr, _ := n.slots.known(driver.HashSlot(key))
	return rediscmd.OnShard(key, addr, err)
}

// clientClosed reports whether c, the user's client under a node of New, is
// closed, after a call on it failed with err. The library reports a closed
// client with ErrClosing, but it also fails with ErrClosing a command in
// flight on a connection it closes while it stays open (a cluster client's,
// to a node gone from its slot map). So c itself is asked: a PING, which a
// closed client fails with ErrClosing without a network call, bounded by ctx
// and by probeTimeout.
func (n *node[C, D, R, L]) clientClosed(ctx context.Context, c C, err error) bool {
	if !errors.Is(err, n.lib.ErrClosing) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err = n.bounded(ctx, func() (any, error) { return n.lib.Do(ctx, c, "PING").ToAny() })
	return errors.Is(err, n.lib.ErrClosing)
}

// call sends cmd on s's lane, if the call may take it (see lane): it is due
// within batch.CancelLag, and is lone: no call is in flight on s's client,
// nor was one with another in the last laneCooldown. Otherwise it sends cmd
// on s's client, once the gate lets it in (see Pending). It returns the
// reply, whether cmd went on the lane (laned), and the deadline it had on
// the network once sent (due; zero if it was not). The call is bounded on the network by ctx's deadline, or by its
// network timeout from when it is sent if that is sooner
// (driver.WithNetworkTimeout); its wait at the gate by ctx alone. It returns
// as soon as ctx is canceled, except a call due within batch.CancelLag (on
// the lane, or with such a network timeout), which returns by its deadline,
// as the goredis and redigo drivers' calls do.
func (n *node[C, D, R, L]) call(ctx context.Context, s *state[C], cmd *rediscmd.Cmd) (reply any, laned bool, due time.Time, err error) {
	now := time.Now()
	dl, bounded := ctx.Deadline()
	d, hasNet := driver.NetworkTimeout(ctx)
	if hasNet {
		if t := now.Add(d); !bounded || t.Before(dl) {
			dl, bounded = t, true
		}
	}
	wantLane := false // a call that could take a lane found none
	if bounded && dl.Sub(now) <= batch.CancelLag {
		// Only a lone call: under load the calls are pipelined together,
		// and one sent apart would cost its own writes and reads on the
		// client and on the server.
		if n.sending.Load() == 0 && now.UnixNano() >= n.crowded.Load() {
			l, busy := n.takeLane(s, now)
			if l != nil {
				if reply, sent, err := n.onLane(ctx, s, l, cmd, now, dl); sent {
					return reply, true, dl, err
				}
			}
			if busy {
				n.crowd(now)
			}
		}
		wantLane = s.lane.Load() == nil
	}
	if err := n.gate.Enter(ctx); err != nil {
		return nil, false, time.Time{}, err // not sent
	}
	if c := n.cur.Load(); c != nil && c.closed() {
		// Closed while the call waited at the gate: never sent, also
		// through a client the user made (New), which Close leaves open.
		n.gate.Exit(batch.CutShort, time.Time{})
		return nil, false, time.Time{}, driver.ErrClosed
	}
	entered := n.gate.Start() // zero once the server is known near
	cctx, cancel := ctx, context.CancelFunc(nil)
	if hasNet {
		// From now: the wait at the gate is over. A node that made its
		// client shares the deadlines of calls due within
		// batch.CancelLag, which see a cancellation of ctx by that
		// deadline at the latest (see batch.Deadlines.Bound).
		cctx, cancel = n.due.Bound(ctx, d, n.owned)
	}
	due, _ = cctx.Deadline()
	if n.sending.Add(1) > 1 {
		n.crowd(now) // other calls are in flight
	}
	if n.direct() {
		// As bounded does, without its closure, which would cost
		// allocations on every call (cmd's with it: it would escape).
		reply, err = decode(n.send(cctx, s.client, cmd), cmd.Op)
	} else {
		c := *cmd // the closure's own: cmd stays on the caller's stack
		reply, err = n.bounded(cctx, func() (any, error) { return decode(n.send(cctx, s.client, &c), c.Op) })
	}
	n.sending.Add(-1)
	timedOut := errors.Is(err, context.DeadlineExceeded) && errors.Is(cctx.Err(), context.DeadlineExceeded)
	if timedOut {
		n.stalled(s.client, cmd.Key)
	}
	broken := false
	if _, ok := cctx.Deadline(); ok && errors.Is(err, net.ErrClosed) {
		// The connection was broken under the call because the server
		// did not answer (see stalled): the call ends as on a server that
		// does not answer, at its deadline; or by the node's Close (the
		// only other way a connection of a node's own client is closed),
		// and then the call ends at once, with its outcome unknown: the
		// server may still read the command (not driver.ErrClosed, which
		// says that a call was never sent).
		var closing <-chan struct{} // nil (never) for a node from New
		if n.closing != nil {
			closing = n.closing.Done()
		}
		select {
		case <-cctx.Done():
			err = errors.Join(cctx.Err(), err)
			broken = true
		case <-closing:
		}
	}
	if cancel != nil {
		cancel()
	}
	var (
		netTimeout time.Duration // 0: the server answered (see Gate.Exit)
		replied    time.Time     // when a call that had a reply was sent
	)
	switch {
	case err != nil && ctx.Err() != nil:
		netTimeout = batch.CutShort // cut short by its caller: nothing learned of the server
	case hasNet && (timedOut || broken):
		netTimeout = d // ran out its network timeout without an answer
	case err == nil || n.lib.IsNil(err):
		replied = entered // a reply: the gate learns the round trip (see batch.Gate)
	}
	n.gate.Exit(netTimeout, replied)
	if wantLane && (err == nil || n.lib.IsNil(err)) {
		n.startLane(s) // the client works: a lane may too
	}
	return reply, false, due, err
}

// crowd records that a call at now met another: the node's calls go through
// the pipelining client for laneCooldown (see crowded). It writes crowded at
// most twice per laneCooldown.
func (n *node[C, D, R, L]) crowd(now time.Time) {
	if until := now.Add(laneCooldown).UnixNano(); n.crowded.Load() < until-int64(laneCooldown/2) {
		n.crowded.Store(until)
	}
}

// onLane sends cmd on l, s's lane, which the caller took at now, bounded by
// dl, and gives the lane back. It reports whether cmd was sent: it was not
// if the lane's connection had failed, and the lane is then dropped.
func (n *node[C, D, R, L]) onLane(ctx context.Context, s *state[C], l *lane[C], cmd *rediscmd.Cmd, now, dl time.Time) (reply any, sent bool, err error) {
	lctx := ctx
	if d, ok := ctx.Deadline(); !ok || dl.Before(d) {
		// The lane's own: it carries one call at a time, which the
		// library does not keep once answered (it never pipelines).
		l.ctx = laneContext{Context: ctx, deadline: dl}
		lctx = &l.ctx
	}
	reply, err = decode(n.send(lctx, l.client, cmd), cmd.Op)
	l.ctx = laneContext{} // keeps nothing of the caller's
	if errors.Is(err, errRedial) {
		n.dropLane(s, l)
		return nil, false, nil
	}
	l.used.Store(now.UnixNano())
	l.busy.Store(false)
	if err == nil || n.lib.IsNil(err) {
		n.gate.Learn(now) // the round trip, which the gate scales by (see batch.Gate); a load once near
	}
	return reply, true, err
}

// okReply is SET's "OK", boxed once.
var okReply any = "OK"

// decode returns res decoded as ToAny does; SET NX's reply (OK or nil) is
// read as a string, which ToAny would box on every call.
func decode[R Result](res R, op rediscmd.Op) (any, error) {
	if op != rediscmd.OpSetNX {
		return res.ToAny()
	}
	s, err := res.ToString()
	switch {
	case err != nil:
		return nil, err
	case s == "OK":
		return okReply, nil
	}
	return s, nil
}

// bounded returns what f, a call of the library on the node's client with
// ctx, returns. A client of New's (the caller's), and a cluster client of
// Open's, which dials again after its creation (see dial), may hold a call
// beyond its context: a call that finds the client making a connection again
// (after one broke or timed out) waits for it whatever its context, and the
// connection may be made for a call with a long context, or for a cluster
// client's refresh of its slots, up to the client's dial timeout (5s by
// default). So f runs on a goroutine of its own (untildone.Do), and the call
// returns at ctx's end; one cut short so goes on in the background until the
// library returns it, bounded by the client's own timeouts (its
// Dialer.Timeout and ConnWriteTimeout; the client's Close does not end the
// wait for a connection being made, which goes on up to the dial timeout,
// while a node of Open's Close aborts its dials), and its outcome is unknown,
// as that of any call whose context ended in flight. A client of Open's for
// a single server never waits so (see dial and lost): f runs on the caller's
// goroutine. Every call of the library that a caller's context bounds goes
// through bounded: the commands, and the questions of Identity and of
// Subscribe's routing on a cluster (see askAny and touchSlot).
func (n *node[C, D, R, L]) bounded(ctx context.Context, f func() (any, error)) (any, error) {
	if n.direct() {
		return f()
	}
	return untildone.Do(ctx, f, nil)
}

// direct reports whether the node's client never holds a call beyond its
// context, which then runs on the caller's goroutine (see bounded): a client
// of Open's for a single server.
func (n *node[C, D, R, L]) direct() bool { return n.owned && !n.cluster }

// send sends cmd on c: SET, or its script by EVALSHA, and by EVAL when the
// server answers NOSCRIPT. On a client that is not a cluster client, the
// command goes as its words (Library.Send), without the hash slot that the
// library's builders compute for each key, which only a cluster client
// reads.
func (n *node[C, D, R, L]) send(ctx context.Context, c C, cmd *rediscmd.Cmd) R {
	s, ok := cmd.Script()
	keys, nk := cmd.KeyArray()
	args, na := cmd.ArgArray()
	if n.cluster {
		if !ok {
			return n.lib.Set(ctx, c, cmd.Key, cmd.Value, driver.Milliseconds(cmd.TTL))
		}
		return n.lib.Exec(ctx, c, n.lib.scripts[s.SHA1()], Keys{keys, nk}, Args{args, na})
	}
	var w Words
	if !ok {
		w.add("SET") // then the key, and Value NX PX ms (see rediscmd.Cmd.Args)
	} else {
		w.add("EVALSHA", s.SHA1(), strconv.Itoa(nk))
	}
	w.add(keys[:nk]...)
	w.add(args[:na]...)
	r := n.lib.Send(ctx, c, w)
	if ok && n.lib.IsNoScript(r.Error()) {
		w.a[0], w.a[1] = "EVAL", s.Source()
		r = n.lib.Send(ctx, c, w)
	}
	return r
}
