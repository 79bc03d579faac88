package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/lastwords"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/internal/respguard"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("redigo", Driver{}) }

// Settings of the pools that Open builds.
const (
	// connectTimeout bounds a TCP connect when the call's context allows longer.
	connectTimeout = 5 * time.Second
	// maxIdle keeps a connection each for many concurrent lockers.
	maxIdle = 64
	// minMaxActive is the least number of connections a pool may have open
	// at once (see maxActive).
	minMaxActive = 64
	// idleTimeout closes connections unused for this long.
	idleTimeout = 4 * time.Minute
	// keepAlive is the TCP keep-alive period, redigo's default.
	keepAlive = 5 * time.Minute
	// writeTimeout bounds each write to a connection. A command of the
	// library is about a hundred bytes, which the kernel buffers at once
	// whatever the server does, so a write blocks only once the server has
	// stopped reading megabytes ago; the connection is then broken (no
	// goroutine of a call outlives the node timeout by more than a small
	// margin). redigo bounds a read by the call's deadline, not a write.
	writeTimeout = 500 * time.Millisecond
	// readTimeout bounds a read when the call's context has no deadline,
	// and the reading of the replies a closed connection still waits for.
	readTimeout = 3 * time.Second
)

// Driver opens redigo nodes by address. It is registered as "redigo".
type Driver struct{}

// Open returns a node for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS, whose query parameters tls_ca_file, tls_cert_file, tls_key_file and
// tls_server_name set the CAs to trust (default: the system's), a client
// certificate and its key, and the name to verify the server's certificate
// against (default: the host). redigo has no Redis Cluster client: a
// cluster's address (cluster=true) is an error that names the drivers that
// open one. The node has a connection pool of its own that
// its Close closes. It does not connect: the node dials on use, so Open fails
// only for a malformed address or TLS files it cannot load, and its error
// never contains the password.
func (Driver) Open(addr string) (driver.Node, error) { return open(addr, nil) }

// OpenConfig is Open with a driver.Config: with cfg.TLS set, the node
// connects with TLS whatever the address's scheme, with a copy of cfg.TLS on
// which a rediss:// address's tls_* parameters are applied. redlock.Open calls
// it for redlock.WithTLSConfig.
func (Driver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	return open(addr, cfg.TLS)
}

var _ driver.ConfigOpener = Driver{}

// maxActive bounds the connections a pool of Open's has open at once, as
// go-redis bounds its pool: a call whose context ends before its reply comes
// loses its connection (redigo closes it), so that a flood of short calls
// would otherwise dial without limit. A call waits for a connection as long
// as its context allows.
func maxActive() int { return max(minMaxActive, 10*runtime.GOMAXPROCS(0)) }

// open opens a node for addr, with TLS over a copy of base when base is set.
// errCluster is Open's error for a Redis Cluster address.
var errCluster = errors.New("redigo has no Redis Cluster client: open a cluster node (cluster=true) with the goredis, rueidis or valkeygo driver")

func open(addr string, base *tls.Config) (driver.Node, error) {
	if n, err := redisaddr.ParseNode(addr); err == nil && n.Cluster {
		return nil, fmt.Errorf("redigo: %s: %w", n, errCluster)
	}
	a, tlsConfig, err := redisaddr.ParseTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("redigo: %w", err)
	}
	opts := []redis.DialOption{
		redis.DialUsername(a.Username),
		redis.DialPassword(a.Password),
		redis.DialDatabase(a.DB),
		redis.DialConnectTimeout(connectTimeout),
		redis.DialReadTimeout(readTimeout),
		redis.DialWriteTimeout(writeTimeout),
	}
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: keepAlive}
	dial := d.DialContext
	if tlsConfig != nil {
		// redigo's own TLS handshake does not watch the context; this
		// dialer's does, so a stalled server holds no call beyond its
		// context (see package tlsdial).
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return tlsdial.Dial(ctx, d, network, addr, tlsConfig)
		}
	}
	// Replies that announce more than the process can hold break the
	// connection (see package respguard); a server that refuses the
	// connection with an error reply is named in the error (see package
	// lastwords).
	dial = respguard.Dialer(dial, lastwords.Wrap)
	idle := newIdleChecker()
	pool := &redis.Pool{
		DialContext:  dialer(a.HostPort(), dial, opts),
		TestOnBorrow: idle.check,
		MaxIdle:      maxIdle,
		MaxActive:    maxActive(),
		Wait:         true, // for a connection, as long as the call's context allows
		IdleTimeout:  idleTimeout,
	}
	n := newNode(pool, drivernode.Name(a.String()), true)
	n.idle = idle
	return n, nil
}

// New returns a node over a pool the caller configured; its DialContext (or
// Dial) decides the server, credentials and database. The caller keeps the
// pool: the node's Close does not close it, but calls on the node fail after
// Close. The pool's connections must support contexts and timeouts
// (redis.ConnWithContext and redis.ConnWithTimeout), as those of redis.Dial
// and redis.DialContext do. If p is nil, every call on the node, and
// Close, return an error.
//
// The node's String is "redigo(0x...)", naming the pool by its address in
// memory, so that redlock.New tells nodes over different pools apart and
// refuses two nodes over the same pool: the server a pool connects to is
// known only to its Dial, and cannot be learned without a round trip. That
// name is the node's in errors, logs and the redlock.node attribute of
// metrics: a program that keeps making pools, and Clients over them, adds a
// metric series with each, and two processes name one server differently.
// Use NewNamed to name the node by the server instead.
//
// A call returns by the end of its context even when p holds it longer:
// p's Dial and TestOnBorrow take no context, and redigo's documentation
// shows them without timeouts (a Dial whose AUTH waits for a server that
// does not answer, a TestOnBorrow that PINGs it), and a DialContext or a
// TestOnBorrowContext may not watch the context it gets. The node gets each
// connection from p on a goroutine of its own, until p returns it (bounded
// by the timeouts of p's functions, if any); a connection that comes after
// the call's context ended goes back to p. The node's Close does not wait
// for such gets, unless p has Wait set with a MaxActive: redigo's
// Pool.Close races with a GetContext waiting for a free connection, so the
// node's Close ends those waits (the gets' contexts end with it) and waits
// for the gets in progress, but no longer than a second: a get still in
// progress then is in p's Dial or TestOnBorrow, which Pool.Close does not
// race with, and what the gets that ended did in p happens before Close
// returns: close p after the node (or the Client over it), not while calls
// may be in flight, as redigo's Pool.Close may panic (send on a closed
// channel) when the context of a GetContext waiting for a free connection
// ends as it closes. The calls made meanwhile, and those whose get Close
// ended, fail with driver.ErrClosed. A get's goroutine ends only when p's
// functions return: give p a Dial with timeouts (redis.DialConnectTimeout,
// DialReadTimeout and DialWriteTimeout, or a DialContext, which gets the
// call's context) and a TestOnBorrow bounded too, or a server that never
// answers (blackholed, stopped) holds a goroutine, and one of p's
// MaxActive connections, for ever.
//
// Release notifications (driver.Notifier's Subscribe) use one connection of
// the node's own, made with the pool's DialContext (or Dial) and never put in
// the pool.
func New(p *redis.Pool) driver.Node {
	return newNode(p, drivernode.Name(fmt.Sprintf("redigo(%p)", p)), false)
}

// NewNamed is New with the node named name, such as the address p's Dial
// connects to, in errors, logs and the redlock.node attribute of metrics,
// with any credentials in it removed ("redis://user:pw@host:6379" is named
// "redis://xxxxx@host:6379"): nodes over pools of the same server keep one
// name whenever the program makes them. Nodes given to one redlock.New must
// have distinct names. An empty name leaves New's.
func NewNamed(p *redis.Pool, name string) driver.Node {
	n := New(p).(*node)
	if name != "" {
		n.Name = drivernode.Name(redisaddr.Redact(name))
	}
	return n
}

func newNode(p *redis.Pool, name drivernode.Name, ownsPool bool) *node {
	n := &node{pool: p, Name: name, ownsPool: ownsPool}
	n.Run = n.do
	if p == nil {
		n.state.SetNilClient("redigo", "pool") // every call fails
	} else {
		n.hub = pubsub.New(n.dialPubSub)
		n.batch = batch.New(n.exec, batch.Senders, batch.MaxBatch)
		if ownsPool {
			n.batch.ShareDeadlines() // its dial needs none of the callers' contexts' values
		} else {
			n.closing, n.stopGetting = context.WithCancel(context.Background())
		}
	}
	return n
}

// node is a driver.Node over a redigo pool. Its command methods send the
// commands of package rediscmd through do. Its String and Format (from
// drivernode.Name) show its address without credentials, or the pool's.
type node struct {
	drivernode.Name
	rediscmd.Commands             // the command methods, which send with do
	pool              *redis.Pool // nil for New(nil)
	ownsPool          bool
	idle              *idleChecker                                  // the pool's TestOnBorrow for Open; nil for New
	hub               *pubsub.Hub                                   // the release subscriptions; nil for New(nil)
	batch             *batch.Batcher[rediscmd.Cmd, rediscmd.Result] // nil for New(nil)
	state             drivernode.State                              // nil pool, closed
	// getting is held (read) around pool.GetContext of Open's pools, and
	// around the start of a get on a pool of New's, and (write) by Close:
	// redigo's Pool.Close races with a GetContext waiting for a free
	// connection (Wait is set), closing the channel that GetContext sends
	// a connection back on when its context ends. Close waits for the gets
	// of Open's pools, bounded by their contexts and timeouts, and for
	// those of New's pools that wait as gets counts them. A pool of New's
	// that does not wait (see waits) has no such channel: Close then does
	// not wait for a Dial or a TestOnBorrow that waits for a server that
	// does not answer.
	getting sync.RWMutex
	// closing ends at Close: it ends the gets in progress on a pool of
	// New's that waits, each bounded by it, whose wait for a free
	// connection then returns (see conn). nil for a node of Open's or
	// New(nil).
	closing     context.Context
	stopGetting context.CancelFunc
	// gets counts the gets in progress on a pool of New's that waits,
	// which Close waits for, at most closeGrace (see Close); getsDone
	// is closed when they are done, once Close asked for it.
	getsMu   sync.Mutex
	gets     int
	getsDone chan struct{}
}

// closeGrace bounds how long the Close of a node of New, over a pool that
// waits (Wait and MaxActive), waits for the gets of connections in
// progress, after it ended their waits for a free connection: a get still in
// progress then is in the pool's Dial or TestOnBorrow, which do not watch
// contexts, and which redigo's Pool.Close does not race with (see getting).
const closeGrace = time.Second

// Close makes later calls fail with driver.ErrClosed, closes the node's pub/sub
// connection, and closes the pool if Open made it. Closing twice does nothing.
// On a node from New(nil) it returns an error.
func (n *node) Close() error {
	n.getting.Lock()
	first, err := n.state.Close()
	n.getting.Unlock()
	if !first {
		return err
	}
	n.hub.Close()
	if !n.ownsPool {
		n.stopGetting()
		n.waitGets()
		return nil
	}
	return n.pool.Close()
}

// waitGets waits for the gets in progress on a pool of New's that waits
// (see gets), at most closeGrace.
//
// When closeGrace has passed first, it takes getsMu once more: every get
// that ended meanwhile did so under it (addGet), so that what the get did
// in the pool happens before Close returns, and so before the caller's
// Pool.Close. It matters for a get that Close's cancellation ends in
// redigo's wait for a free connection just as it is handed one: redigo puts
// the connection back with a send on the channel that Pool.Close closes,
// outside the pool's mutex. Without that second lock, once another get
// stayed in the pool's Dial (Close waiting its whole grace), nothing
// ordered that send before Close's return, and the race detector reported
// it racing with the caller's Pool.Close (TestNewCloseEndsWaitBeforePoolClose,
// and once TestNewCloseWhileDialStalls); had the send come after
// Pool.Close, it would have panicked. A get still in progress after
// closeGrace is past that wait, in the pool's Dial or TestOnBorrow, unless
// the process did not run it for all of closeGrace.
func (n *node) waitGets() {
	n.getsMu.Lock()
	if n.gets == 0 {
		n.getsMu.Unlock()
		return
	}
	done := make(chan struct{})
	n.getsDone = done
	n.getsMu.Unlock()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.getsMu.Lock()
		n.getsDone = nil
		n.getsMu.Unlock()
	}
}

// addGet counts a get in progress by d (1 at its start, -1 at its end).
func (n *node) addGet(d int) {
	n.getsMu.Lock()
	n.gets += d
	if n.gets == 0 && n.getsDone != nil {
		close(n.getsDone)
		n.getsDone = nil
	}
	n.getsMu.Unlock()
}

// do sends cmd through the node's batcher. Its errors match ctx.Err() when
// ctx is done: redigo bounds a read by a socket deadline equal to ctx's,
// which can fire before ctx itself reports DeadlineExceeded.
func (n *node) do(ctx context.Context, cmd rediscmd.Cmd) (rediscmd.Result, error) {
	if err := n.state.Err(); err != nil {
		return rediscmd.Result{}, err
	}
	r, err := n.batch.Do(ctx, cmd)
	if err != nil {
		// One server, always: a cluster's server given as one redirects
		// the keys of its cluster's other nodes (driver.OneServerError).
		return rediscmd.Result{}, cmd.Failed(ctx, "redigo", driver.OneServerError(err))
	}
	return r, nil
}

// exec is the node's batch.Exec: it sends calls on one connection from the
// pool, one command directly, several as one pipeline.
func (n *node) exec(ctx context.Context, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result]) {
	// A lone call's ctx may be a deadline shared by calls (see
	// batch.ShareDeadlines): a call its caller canceled before it got a
	// connection is not sent.
	caller := ctx
	if len(calls) == 1 {
		caller = calls[0].Ctx()
	}
	c, err := n.conn(ctx, caller)
	if err != nil {
		for _, call := range calls {
			call.Err = err
		}
		return
	}
	stale := execOn(ctx, c, calls) && n.idle != nil
	if stale {
		n.idle.sawStale() // before another call takes a connection
	}
	// A connection whose command failed or was cut short by ctx has its
	// error set (redigo closes it at once), so Close discards it instead of
	// pooling it.
	c.Close()
	if !stale || ctx.Err() != nil || caller.Err() != nil {
		return
	}
	// The calls failed, before any reply to them came, on a connection
	// that had answered before (see staleError): the server most likely
	// closed it while it was idle in the pool (a restart, CLIENT KILL, its
	// idle timeout), and with it every other connection put back before
	// now, which the pool checks from now on before it hands one out (see
	// idleChecker). The calls go again, once and at once, within the same
	// ctx, on a connection so checked or a new one, as rediscmd.Cmd.Again
	// says (a SET NX as driver.SetNXAgainScript, which counts the key its
	// first send may have set as set; the scripts as they are): without it,
	// a release right after the server dropped the connections failed on
	// them, and the key stayed for its whole TTL when the Client closed
	// before a background repeat, and a TryLock failed. A server that stays
	// down fails the repeat at the dial, within ctx. A repeated release that
	// deletes nothing is no answer (rediscmd.Cmd.Repeated).
	orig := make([]rediscmd.Cmd, len(calls))
	first := make([]error, len(calls))
	for i, call := range calls {
		orig[i], first[i] = call.Cmd, call.Err
		call.Cmd, call.Res, call.Err = call.Cmd.Again(), rediscmd.Result{}, nil
	}
	defer func() {
		for i, call := range calls {
			call.Cmd = orig[i] // the caller's, as it gave it
		}
	}()
	if c, err = n.conn(ctx, caller); err != nil {
		for i, call := range calls {
			call.Res, call.Err = orig[i].Repeated(rediscmd.Result{}, err, first[i])
		}
		return
	}
	execOn(ctx, c, calls)
	c.Close()
	for i, call := range calls {
		call.Res, call.Err = orig[i].Repeated(call.Res, call.Err, first[i])
	}
}

// execOn sends calls on c, one command directly, several as one pipeline,
// and reports whether every call failed with a staleError, none answered.
func execOn(ctx context.Context, c redis.Conn, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result]) (stale bool) {
	if len(calls) == 1 {
		call := calls[0]
		call.Res, call.Err = one(ctx, c, &call.Cmd)
		return isStale(call.Err)
	}
	replies := make([]any, len(calls))
	errs := make([]error, len(calls))
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	pipeline(ctx, c, calls, all, false, replies, errs)
	var again []int
	for i, err := range errs {
		if isNoScript(err) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipeline(ctx, c, calls, again, true, replies, errs)
	}
	stale = true
	for i, call := range calls {
		if errs[i] != nil {
			call.Err = errs[i]
			stale = stale && isStale(errs[i])
			continue
		}
		stale = false
		call.Res, call.Err = call.Cmd.Parse(replies[i])
	}
	return stale
}

// one sends cmd alone. When ctx's deadline is near (within batch.CancelLag, as the
// Redlock node timeout is by default), the read is bounded by it and a
// cancellation is seen by the deadline at the latest; otherwise redigo
// watches ctx, at the cost of a goroutine per call.
func one(ctx context.Context, c redis.Conn, cmd *rediscmd.Cmd) (rediscmd.Result, error) {
	do := func(name string, args []any) (any, error) {
		if d, ok := ctx.Deadline(); ok && time.Until(d) <= batch.CancelLag {
			timeout := time.Until(d)
			if timeout <= 0 {
				return nil, context.DeadlineExceeded
			}
			return redis.DoWithTimeout(c, timeout, name, args...)
		}
		return redis.DoContext(c, ctx, name, args...)
	}
	reply, err := do(command(cmd, false))
	if isNoScript(err) {
		reply, err = do(command(cmd, true))
	}
	if err != nil {
		return rediscmd.Result{}, err
	}
	return cmd.Parse(reply)
}

// pipeline sends the commands of calls at the indexes idx, then reads their
// replies into replies and errs, the reads bounded together by ctx's
// deadline.
func pipeline(ctx context.Context, c redis.Conn, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result], idx []int, eval bool, replies []any, errs []error) {
	fail := func(err error) {
		for _, i := range idx {
			replies[i], errs[i] = nil, err
		}
	}
	for _, i := range idx {
		name, args := command(&calls[i].Cmd, eval)
		if err := c.Send(name, args...); err != nil {
			fail(err)
			return
		}
	}
	if err := c.Flush(); err != nil {
		fail(err)
		return
	}
	d, bounded := ctx.Deadline()
	for k, i := range idx {
		if bounded {
			// What is left of the deadline, for every read: a server
			// that trickles its replies does not get the whole of it
			// again for each. Once it has passed, the replies that have
			// arrived are still read, and the first read that would wait
			// breaks the connection: left with replies pending, the
			// connection's Close would wait for them without a deadline,
			// on a server that may never answer: no goroutine may outlive
			// the node timeout.
			replies[i], errs[i] = redis.ReceiveWithTimeout(c, max(time.Until(d), time.Nanosecond))
		} else {
			// The connection's own read timeout (readTimeout for
			// Open's pools). Not ReceiveWithTimeout(c, 0), which redigo
			// takes as no deadline at all: a batch of calls without
			// deadlines on a server that stopped answering waited for
			// it for ever, and the node's sender with it.
			replies[i], errs[i] = c.Receive()
		}
		var serverErr redis.Error
		if errs[i] != nil && !errors.As(errs[i], &serverErr) {
			fail := errs[i] // the connection is broken: no more replies
			for _, j := range idx[k+1:] {
				replies[j], errs[j] = nil, fail
			}
			return
		}
	}
}

// command returns the name and arguments that send cmd: SET, or its script
// by EVALSHA, or by EVAL when eval is set.
func command(cmd *rediscmd.Cmd, eval bool) (string, []any) {
	keys, argv := cmd.Keys(), cmd.Args()
	args := make([]any, 0, 2+len(keys)+len(argv))
	s, ok := cmd.Script()
	name := "EVALSHA"
	switch {
	case !ok:
		name = "SET"
	case eval:
		name = "EVAL"
		args = append(args, s.Source(), len(keys))
	default:
		args = append(args, s.SHA1(), len(keys))
	}
	for _, k := range keys {
		args = append(args, k)
	}
	for _, a := range argv {
		args = append(args, a)
	}
	return name, args
}

// isNoScript reports whether err is the server's NOSCRIPT: it does not have
// the script yet, and the command must go by EVAL.
func isNoScript(err error) bool {
	var serverErr redis.Error
	return errors.As(err, &serverErr) && strings.HasPrefix(string(serverErr), "NOSCRIPT")
}

// conn returns a connection from the pool, unless ctx or caller (the
// context of the call's caller, which ctx may not carry when it is a shared
// deadline: see batch.ShareDeadlines) has ended.
func (n *node) conn(ctx, caller context.Context) (redis.Conn, error) {
	// GetContext, with an idle connection, does not check a context that is
	// already done.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := caller.Err(); err != nil {
		return nil, err
	}
	if !n.getting.TryRLock() {
		// Close is under way: the call does not wait behind it.
		return nil, driver.ErrClosed
	}
	if err := n.state.Err(); err != nil {
		n.getting.RUnlock()
		return nil, err
	}
	var (
		c   redis.Conn
		err error
	)
	if n.ownsPool {
		// With a shared deadline, a wait for a connection (the pool's
		// busy: the batcher keeps at most two) or its dial ends at that
		// deadline, not at the caller's cancellation.
		c, err = n.pool.GetContext(ctx)
		n.getting.RUnlock()
	} else {
		// A pool of the user's may hold GetContext beyond ctx: its Dial
		// and its TestOnBorrow take no context (redigo's documentation
		// shows them without timeouts), and its DialContext or
		// TestOnBorrowContext may not watch the one they get. The get
		// runs on a goroutine; a connection that comes after ctx ended
		// goes back to the pool.
		if !waits(n.pool) {
			n.getting.RUnlock()
			c, err = pubsub.DialUntilDone(ctx, func() (redis.Conn, error) { return n.pool.GetContext(ctx) })
		} else {
			// The pool waits for a free connection, on a channel that
			// its Close closes, which races with that wait: the get is
			// counted (under getting, so that Close counts every get
			// begun before it), and ends with Close, which ends its
			// wait for a connection and waits for it (see Close).
			n.addGet(1)
			n.getting.RUnlock()
			gctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(n.closing, cancel)
			c, err = pubsub.DialUntilDone(gctx, func() (redis.Conn, error) {
				defer n.addGet(-1)
				return n.pool.GetContext(gctx)
			})
			// Not in the get's goroutine: a cancel there, as it returns
			// a connection, ends gctx before DialUntilDone has the
			// connection, which it may then close and fail the call
			// with context.Canceled. Here the get has returned, or gctx
			// has ended already (ctx or Close).
			stop()
			cancel()
			if err != nil && ctx.Err() == nil && n.closing.Err() != nil {
				err = driver.ErrClosed // Close ended the get
			}
		}
	}
	if err != nil && err.Error() == errClosedPool {
		// The user closed the pool under a node of New: it never opens
		// again, as a closed node does not.
		err = fmt.Errorf("%w: %w", driver.ErrClosed, err)
	}
	return c, err
}

// waits reports whether p has its GetContext wait for a connection when
// MaxActive are open (Wait), on a channel that p's Close closes.
func waits(p *redis.Pool) bool { return p.Wait && p.MaxActive > 0 }

// errClosedPool is the message of redigo's error for a connection asked of a
// closed Pool, which redigo does not export.
const errClosedPool = "redigo: get on closed pool"

var _ driver.Queuer = (*node)(nil)

// Pending reports the commands waiting in the node's pipelining queue (see
// driver.Queuer).
func (n *node) Pending() driver.Pending {
	if n.batch == nil {
		return driver.Pending{}
	}
	return n.batch.Pending()
}
