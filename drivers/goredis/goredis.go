package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/clusterseeds"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/goredispipe"
	"github.com/go-redlock/redlock/internal/lastwords"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/internal/respguard"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/internal/untildone"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("goredis", Driver{}) }

// Client settings for the clients Open builds. A command's context deadline,
// normally the Redlock node timeout, is shorter than these; they bound calls
// whose context has no deadline.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 3 * time.Second // read and write
	minPoolSize = 64              // connections, for 64 concurrent lockers
)

// Driver opens go-redis nodes by address. It is registered as "goredis".
type Driver struct{}

// Open returns a node that owns a new *redis.Client for addr, which is
// "host:port", "redis://[user:password@]host:port[/db]" or the same with
// "rediss://" for TLS, whose query parameters tls_ca_file, tls_cert_file,
// tls_key_file and tls_server_name set the CAs to trust (default: the
// system's), a client certificate and its key, and the name to verify the
// server's certificate against (default: the host); or a new
// *redis.ClusterClient for a Redis Cluster,
// "redis[s]://[user:password@]host:port?cluster=true&addr=host2:port2" (the
// URL's host and every addr are seeds; see the package documentation). It
// does not connect: the client dials on first use. Open fails only for a
// malformed address or TLS files it cannot load, and its error never
// contains the password.
func (Driver) Open(addr string) (driver.Node, error) { return open(addr, nil) }

// OpenConfig is Open with a driver.Config: with cfg.TLS set, the node
// connects with TLS whatever the address's scheme, with a copy of cfg.TLS on
// which a rediss:// address's tls_* parameters are applied. redlock.Open calls
// it for redlock.WithTLSConfig.
func (Driver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	return open(addr, cfg.TLS)
}

var _ driver.ConfigOpener = Driver{}

// open opens a node for addr, with TLS over a copy of base when base is set.
func open(addr string, base *tls.Config) (driver.Node, error) {
	a, tlsConfig, err := redisaddr.ParseNodeTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("goredis: %w", err)
	}
	dial := redis.NewDialer(&redis.Options{DialTimeout: dialTimeout, TLSConfig: tlsConfig})
	if tlsConfig != nil {
		// go-redis' own TLS dialer does not watch the context during the
		// handshake; this one does, so a stalled server holds no call
		// beyond its context (see package tlsdial).
		d := &net.Dialer{Timeout: dialTimeout}
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return tlsdial.Dial(ctx, d, network, addr, tlsConfig)
		}
	}
	// Replies that announce more than the process can hold break the
	// connection (see package respguard); a server that refuses the
	// connection with an error reply is named in the error (see package
	// lastwords).
	guarded := respguard.Dialer(dial, lastwords.Wrap)
	var seeds *clusterseeds.Checker // nil but on a cluster of several seeds
	if a.Cluster {
		seeds = clusterseeds.New(a.Seeds, dialTimeout, askSlots(a, tlsConfig, guarded))
	}
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		// No connection to a seed of the cluster's that was not checked
		// to be of the same cluster as the others (see clusterseeds).
		if err := seeds.Admit(ctx, addr); err != nil {
			return nil, err
		}
		conn, err := guarded(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if ctx.Value(pubSubDial{}) != nil {
			conn = pubsub.CloseOnDone(ctx, conn)
		}
		return conn, nil
	}
	if a.Cluster {
		c := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 a.Seeds,
			Username:              a.Username,
			Password:              a.Password,
			TLSConfig:             tlsConfig, // informative: the Dialer does the TLS
			Dialer:                dialer,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1, // a lost reply means an unknown outcome: never resend
			MaxRedirects:          maxRedirects,
			DialerRetries:         1,
			DialTimeout:           dialTimeout,
			ReadTimeout:           ioTimeout,
			WriteTimeout:          ioTimeout,
			PoolSize:              max(minPoolSize, 10*runtime.GOMAXPROCS(0)),
			DisableIdentity:       true, // no CLIENT SETINFO: a round trip more
		})
		n := newNode(c, drivernode.Name(a.String()), true)
		n.owned, n.reload, n.seeds = true, newReloader(c), seeds
		n.batch.ShareDeadlines() // no user's hooks need the callers' contexts
		n.shards.share = true
		n.router = newRouter(c)
		return n, nil
	}
	opts := &redis.Options{
		Addr:                  a.HostPort(),
		Username:              a.Username,
		Password:              a.Password,
		DB:                    a.DB,
		TLSConfig:             tlsConfig, // informative: the Dialer does the TLS
		Dialer:                dialer,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1, // a lost reply means an unknown outcome: never resend
		DialerRetries:         1,  // fail fast on a down server; the next call dials again
		DialTimeout:           dialTimeout,
		ReadTimeout:           ioTimeout,
		WriteTimeout:          ioTimeout,
		PoolSize:              max(minPoolSize, 10*runtime.GOMAXPROCS(0)),
		// A new connection's handshake is HELLO alone, one round trip,
		// made in the background (see warmer); pipelines take their
		// connections from the same pool, which the warmer fills.
		DisableIdentity:          true, // no CLIENT SETINFO: a round trip more
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PipelinePoolSize:         -1,
	}
	c := redis.NewClient(opts)
	n := newNode(c, drivernode.Name(a.Addr.String()), true)
	n.owned, n.hub, n.warm = true, pubsub.New(n.dialPubSub), newWarmer(c)
	n.lanes.client, n.lanes.state = c, &n.state
	n.batch.ShareDeadlines() // no user's hooks need the callers' contexts
	return n, nil
}

// maxRedirects bounds the MOVED and ASK redirections a command follows on a
// cluster while slots migrate. A redirection is safe to follow: the node
// that answers MOVED or ASK did not run the command.
const maxRedirects = 8

// New returns a node over c, a client the caller configured. The caller keeps
// ownership: the node's Close does not close c. If c is nil, every call on the
// node, and Close, return an error.
//
// c should have ContextTimeoutEnabled set, so that each command's context
// deadline bounds its network I/O, and MaxRetries set to -1, so that go-redis
// never resends a command whose reply was lost; see the package documentation.
// Unless c is a *redis.Client or a *redis.ClusterClient with
// ContextTimeoutEnabled, the node watches every call's context itself, at
// the cost of a goroutine per call. It does so too for a client whose
// ReadTimeout is -2, which go-redis documents as disabling SetReadDeadline
// calls: such a client sets no deadline on its reads, not even the
// context's, and a command on a server that stopped answering would wait
// for the server. (The calls that meet and go together in one pipeline
// return by their contexts' ends too, but the pipeline waits for the server
// in the background, as go-redis sets it no deadline.)
//
// A *redis.ClusterClient should not have ReadOnly (which RouteByLatency and
// RouteRandomly set): such a client asks COMMAND of up to three nodes, one
// after the other, before it routes a command, and again before every
// command until a node answers (never, for a user who may not run COMMAND,
// as the README's least-privilege one may not), each bounded by 5s of its own
// rather than by the command's context, under a lock that every command
// waits on; a hung shard among the nodes asked holds the commands on the
// keys of every shard. The node watches every call of such a client, as it
// does without ContextTimeoutEnabled: each returns by its context's end, and
// the command goes on in the background until go-redis returns it.
//
// The node is named in errors, logs and metrics (redlock.node) by what c
// connects to, with credentials removed: c's address for a *redis.Client, its
// seeds for a *redis.ClusterClient (below), and for a *redis.Ring its shards'
// addresses, sorted, without user names, as "ring(host:port,...)" (then
// "/db" when its DB is not 0; see drivernode.Servers: at most 8 listed, then
// "+N"), taken when New is called (SetAddrs does not rename the node). Two
// nodes over clients of the same servers thus have one name, which
// redlock.New refuses as one node given twice, and a program that keeps
// making nodes over fresh clients of the same servers adds no metric series.
// A node over a client of another type (a wrapper of the caller's) is named
// "goredis-N", N counting such nodes, so that redlock.New tells them apart:
// use NewNamed to name it by what it connects to.
//
// A *redis.ClusterClient makes a node that is a whole Redis Cluster, named
// by its seed addresses: c should have MaxRetries -1 too, and the node sends
// every command so that go-redis follows MOVED and ASK redirections but
// never resends one whose reply was lost. Its concurrent commands are
// pipelined shard by shard (a queue per primary), so that a shard that
// hangs holds up the commands on its own keys alone. After a command fails on the
// network (a shard's primary may have died, and a failover replaced it), the
// node has c reload its slot map in the background (ReloadState, at most
// every 200ms), so that the next commands reach the promoted replica.
// Before its first call has c read the slot map, the node asks each of c's
// seeds (ClusterOptions.Addrs, with c's dialer, credentials and TLS, on a
// connection of its own) for CLUSTER SLOTS, as a node of Open's does: if
// two seeds are nodes of two clusters, every call fails with an error
// matching driver.ErrSeedsOfTwoClusters (see the package documentation).
// If a seed did not answer then, the node adds a dial hook to each node
// client that c makes from then on (c.OnNewNode, which cannot be undone),
// so that c connects to that seed only once it answered and agrees; the
// hook does nothing once every seed agreed or the node is closed. One
// function is added to c in all, however many nodes are made over it: it
// hooks every node client c makes from then on, whose dials ask the gates
// of c's live nodes (see seedGate), also one made while no node had a gate.
// Node clients c made before the first node's first call (or Identity, or
// Subscribe) are not gated: let the node be c's first user.
//
// Once the caller closes c, the node's calls fail with an error matching
// driver.ErrClosed (see driver.ErrClosed). A command that fails with
// redis.ErrClosed on a client other than a *redis.Client, which closes
// clients of its own while it stays open (a Ring those of the shards that
// SetAddrs removes), costs a PING that asks c whether it is closed.
//
// Release notifications (driver.Notifier's Subscribe) need a *redis.Client
// or a *redis.ClusterClient: on another client, such as a Ring, whose
// pub/sub connection may reach another server than the one that publishes a
// key's release, Subscribe returns an error and waiters poll.
func New(c redis.UniversalClient) driver.Node {
	if drivernode.IsNil(c) {
		n := &node{Name: "goredis"}
		n.Run = n.do
		n.state.SetNilClient("goredis", "client") // every call fails
		return n
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		o := cc.Options()
		// A ReadOnly client (RouteByLatency and RouteRandomly set it) may
		// hold a command beyond its context, for COMMAND (see New's doc): its
		// calls are watched.
		n := newNode(c, describeCluster(o), o.ContextTimeoutEnabled && o.ReadTimeout >= 0 && !o.ReadOnly)
		n.router, n.reload = newRouter(cc), newReloader(cc)
		if o.ClusterSlots == nil { // else the client asks no seed for the map
			n.seeds = clusterseeds.New(o.Addrs, dialTimeout, askSlotsOf(o))
			if n.seeds != nil {
				n.gate = new(seedGate)
			}
		}
		return n
	}
	rc, ok := c.(*redis.Client)
	if !ok {
		name := drivernode.Name("")
		if r, isRing := c.(*redis.Ring); isRing {
			name = describeRing(r.Options())
		}
		if name == "" {
			name = unnamed.Next() // a client of the user's type: see NewNamed
		}
		return newNode(c, name, false)
	}
	o := rc.Options()
	// A ReadTimeout of -2 (-1 once go-redis has read its options) sets no
	// read deadline at all, not even the context's: its calls are watched.
	n := newNode(c, describe(o), o.ContextTimeoutEnabled && o.ReadTimeout >= 0)
	n.hub = pubsub.New(n.dialPubSub)
	return n
}

// NewNamed is New with the node named name (in errors, logs and the
// redlock.node attribute of metrics) instead of by its client, with any
// credentials in it removed (see New): for a client whose servers New cannot
// learn (one of the caller's types), so that its nodes keep one name
// whenever the program makes them. Nodes given to one redlock.New must have
// distinct names. An empty name leaves New's.
func NewNamed(c redis.UniversalClient, name string) driver.Node {
	n := New(c).(*node)
	if name != "" {
		n.Name = drivernode.Name(redisaddr.Redact(name))
	}
	return n
}

// newNode returns a node over c that pipelines concurrent commands (see
// package batch) on at most batch.Senders connections at once, per shard of
// a *redis.ClusterClient (see shards).
func newNode(c redis.UniversalClient, name drivernode.Name, bounded bool) *node {
	n := &node{client: c, Name: name, bounded: bounded}
	n.Run = n.do
	switch cc := c.(type) {
	case *redis.ClusterClient:
		n.cluster, n.shards = true, newShards(cc, n.exec)
	case *redis.Client, *redis.Ring:
		n.oneServer = true
	}
	n.batch = batch.New(n.exec, batch.Senders, batch.MaxBatch)
	return n
}

// unnamed names the nodes New made over clients whose servers it cannot
// learn: clients of the caller's types.
var unnamed = drivernode.NewCounter("goredis")

// describe names the server o connects to, without credentials.
func describe(o *redis.Options) drivernode.Name {
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return drivernode.Name(o.Addr) // a Unix socket path, say
	}
	a := redisaddr.Addr{Host: host, Port: port, Username: o.Username, Password: o.Password, DB: o.DB, TLS: o.TLSConfig != nil}
	return drivernode.Name(a.String())
}

// describeRing names the servers of a Ring with options o by their
// addresses, without credentials (see drivernode.Servers), or "" if it has
// none.
func describeRing(o *redis.RingOptions) drivernode.Name {
	addrs := make([]string, 0, len(o.Addrs))
	for _, a := range o.Addrs {
		addrs = append(addrs, a)
	}
	name := drivernode.Servers("ring", addrs)
	if name != "" && o.DB != 0 {
		name += drivernode.Name("/" + strconv.Itoa(o.DB))
	}
	return name
}

// describeCluster names the cluster o reaches by its seeds, without
// credentials.
func describeCluster(o *redis.ClusterOptions) drivernode.Name {
	a := redisaddr.Node{Cluster: true, Seeds: o.Addrs}
	a.Username, a.Password, a.TLS = o.Username, o.Password, o.TLSConfig != nil
	if len(o.Addrs) > 0 {
		if host, port, err := net.SplitHostPort(o.Addrs[0]); err == nil {
			a.Host, a.Port = host, port
		}
	}
	return drivernode.Name(a.String())
}

// node is a driver.Node over a go-redis client. Its command methods send
// the commands of package rediscmd through do. Its String and Format (from
// drivernode.Name) show its address without credentials.
type node struct {
	drivernode.Name
	rediscmd.Commands                       // the command methods, which send with do
	client            redis.UniversalClient // nil for New(nil)
	owned             bool                  // Close closes client
	bounded           bool                  // client bounds a command by its context's deadline (ContextTimeoutEnabled, a ReadTimeout that is not -2, and no ReadOnly on a cluster)
	cluster           bool                  // client is a *redis.ClusterClient
	oneServer         bool                  // client is a *redis.Client or a *redis.Ring, which follow no redirection (see driver.OneServerError)
	reload            *reloader             // reloads the slot map of a *redis.ClusterClient after a failure; nil on one server
	hub               *pubsub.Hub           // the release subscriptions of a *redis.Client
	router            *pubsub.Router        // those of a *redis.ClusterClient
	batch             *batcher              // all the calls on one server; those of a cluster whose primary lookup fails
	shards            *shards               // a batcher per shard of a *redis.ClusterClient; nil on one server
	state             drivernode.State      // nil client, closed
	seeds             *clusterseeds.Checker // refuses a cluster whose seeds are of two clusters; nil but on a cluster of several seeds
	gate              *seedGate             // gates a seed left unvouched by the first check on the caller's cluster client (New); nil but there
	warm              *warmer               // makes connections outside the calls' deadlines; nil unless from Open
	lanes             lanes                 // the connection of lone calls; none unless from Open, on one server
}

// Close closes the node's pub/sub connection, and the client if the node owns
// it (a node from Open). Later calls on the node, and those still in its queue,
// which are never sent, return driver.ErrClosed; closing twice does nothing. On a node from New(nil) it returns an error.
func (n *node) Close() error {
	if first, err := n.state.Close(); !first {
		return err
	}
	if n.hub != nil {
		n.hub.Close()
	}
	if n.router != nil {
		n.router.Close()
	}
	n.lanes.close()
	n.seeds.Close()
	if n.gate != nil {
		n.gate.close()
	}
	if !n.owned {
		return nil
	}
	if err := n.warm.stop(n.client.Close); err != nil {
		return fmt.Errorf("goredis: close: %w", err)
	}
	return nil
}

// do sends cmd through the node's batcher (its shard's, on a cluster), and
// names the command in its error (and on a cluster its slot and primary: see
// rediscmd.OnShard), which matches ctx's error when ctx is done: go-redis
// reports an expired deadline as a network timeout.
func (n *node) do(ctx context.Context, cmd rediscmd.Cmd) (rediscmd.Result, error) {
	if err := n.state.Err(); err != nil {
		return rediscmd.Result{}, err
	}
	var r rediscmd.Result
	err := n.seeds.Err() // a refusal found after the map was read: see clusterseeds.Checker.Admit
	if err == nil && n.shards != nil && !n.shards.known.Load() {
		ctx, err = n.readSlots(ctx) // its error is the command's: unsent
	}
	b, primary := n.batch, ""
	if err == nil {
		if n.shards != nil {
			b, primary = n.shards.batcher(ctx, cmd.Key, b)
		}
		r, err = b.Do(ctx, cmd)
	}
	if err != nil {
		if errors.Is(err, redis.ErrClosed) && n.clientClosed(ctx) {
			// The user closed the client under a node of New: it
			// never opens again, as a closed node does not.
			err = fmt.Errorf("%w: %w", driver.ErrClosed, err)
		} else {
			n.reload.failed(err) // a failover may have replaced the shard's primary
		}
		if n.shards != nil {
			err = rediscmd.OnShard(cmd.Key, primary, err)
		}
		if n.oneServer {
			err = driver.OneServerError(err) // a cluster's server given as one
		}
		return rediscmd.Result{}, cmd.Failed(ctx, "goredis", err)
	}
	return r, nil
}

// readSlots returns once the cluster client has its slot map, having read
// it if need be (see shards.learn), and the context to send the call's
// command with: ctx, or, when this call read the map under a network
// timeout (see driver.Queuer), ctx with what is left of it, so that the
// read and the command together take no longer on the network than one
// command may. The read is bounded by ctx and by the network timeout, and
// watched as a command is (see direct). A call whose read fails, or leaves
// it no time, fails unsent.
func (n *node) readSlots(ctx context.Context) (context.Context, error) {
	d, hasNet := driver.NetworkTimeout(ctx)
	var took time.Duration // by this call's read
	read := false          // this call read the map
	err := n.shards.learn(ctx, func(rctx context.Context) error {
		start := time.Now()
		defer func() { took, read = time.Since(start), true }()
		if hasNet {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(rctx, d)
			defer cancel()
		}
		// The seeds first: the map is read only from a cluster that
		// every seed that answers is a node of (see clusterseeds).
		if err := n.checkSeeds(rctx); err != nil {
			return err
		}
		lookup := func() (struct{}, error) {
			_, err := n.shards.client.MasterForKey(rctx, "")
			return struct{}{}, err
		}
		if n.direct(rctx) {
			_, err := lookup()
			return err
		}
		_, err := untildone.Do(rctx, lookup, nil)
		return err
	})
	switch {
	case err != nil:
		return ctx, err
	case !hasNet || !read:
		return ctx, nil
	case took >= d:
		return ctx, context.DeadlineExceeded // no time left for the command
	}
	return driver.WithNetworkTimeout(ctx, d-took), nil
}

// checkSeeds returns once the first check of the seeds ended (see
// clusterseeds.Checker.Check), with the node's refusal if there is one,
// having gated the caller's cluster client if the check left a seed
// unvouched (see seedGate); or ctx's error, wrapped. The node calls it
// before its client's first reading of the slot map (readSlots), and a
// node of New before Identity and Subscribe.
func (n *node) checkSeeds(ctx context.Context) error {
	if err := n.seeds.Check(ctx); err != nil {
		return err
	}
	if n.gate != nil {
		n.gate.install(n.shards.client, n.seeds)
	}
	return nil
}

// clientClosed reports whether the node's client is closed, after a command
// failed with redis.ErrClosed. A *redis.Client answers it only once closed.
// Other clients close clients of their own while they stay open: a Ring
// those of the shards that SetAddrs removes, a ClusterClient those of nodes
// gone from its slot map, and a command in flight on one of them fails with
// redis.ErrClosed though the next one reaches the new shard. So the client
// itself is asked: a PING, bounded by ctx, which a closed client fails with
// redis.ErrClosed without a network call.
func (n *node) clientClosed(ctx context.Context) bool {
	if _, ok := n.client.(*redis.Client); ok {
		return true
	}
	_, err := untildone.Do(ctx, func() (struct{}, error) {
		ping := routed(redis.NewStatusCmd(ctx, "ping"))
		_ = n.client.Process(ctx, ping)
		return struct{}{}, ping.Err()
	}, nil)
	return errors.Is(err, redis.ErrClosed)
}

// exec is the node's batch.Exec: a lone call on the node's lane if it can
// (see lanes), else the calls through the pool (see pooled), once the
// warmer has a connection ready for them (see warmer).
func (n *node) exec(ctx context.Context, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result]) {
	if err := n.state.Err(); err != nil {
		// Closed while the calls waited in the queue: never sent, as
		// redigo's are not, also through a client the user made (New),
		// which Close leaves open.
		for _, c := range calls {
			c.Err = err
		}
		return
	}
	if len(calls) == 1 && n.lanes.client != nil && n.direct(ctx) {
		if l, fresh := n.lanes.take(time.Now()); l != nil {
			n.onLane(ctx, calls[0], l, fresh)
			return
		}
	}
	var last bool // the calls take the pool's one idle connection
	if n.warm != nil {
		// A lone call's ctx may be a deadline shared by calls (see
		// batch.ShareDeadlines): its caller's cancellation ends the wait too.
		caller := ctx
		if len(calls) == 1 {
			caller = calls[0].Ctx()
		}
		var err error
		if last, err = n.warm.wait(ctx, caller); err != nil {
			for _, c := range calls {
				c.Err = err // not sent
			}
			return
		}
	}
	n.pooled(ctx, calls)
	if last {
		n.warm.refill() // see warmer.refill
	}
}

// pooled sends calls through the node's client, which takes a connection
// from its pool: one command on the caller's goroutine (watched, see
// direct), or several as one pipeline.
func (n *node) pooled(ctx context.Context, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result]) {
	if len(calls) == 1 {
		c := calls[0]
		if err := ctx.Err(); err != nil {
			c.Err = err
			return
		}
		if err := c.Ctx().Err(); err != nil {
			c.Err = err // canceled before it was sent: never sent
			return
		}
		if n.direct(ctx) {
			c.Res, c.Err = n.one(ctx, n.client, &c.Cmd)
			return
		}
		// Watched: the call returns at ctx's end, and the command
		// finishes in the background, bounded by the client's timeouts.
		cmd := c.Cmd // the call may return before the command: c is then reused
		c.Res, c.Err = untildone.Do(ctx, func() (rediscmd.Result, error) { return n.one(ctx, n.client, &cmd) }, nil)
		return
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := n.client.Pipeline()
	for i, c := range calls {
		cmds[i] = send(ctx, pipe, &c.Cmd, false)
	}
	_, err := pipe.Exec(ctx)
	goredispipe.StampUnsent(cmds, err) // each command has its own error, or Exec's
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = n.client.Pipeline()
		for _, i := range again {
			cmds[i] = send(ctx, pipe, &calls[i].Cmd, true)
		}
		_, err = pipe.Exec(ctx)
		goredispipe.StampUnsent(cmds, err)
	}
	for i, c := range calls {
		c.Res, c.Err = result(&c.Cmd, cmds[i])
	}
}

// sender is what a client and a pipeline have in common.
type sender interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// onLane sends c, a call sent alone, on the node's lane l (see lanes); a
// fresh lane's first command takes a connection from the pool, for which it
// waits as any call does, and after which it has the pool refilled (see
// warmer).
func (n *node) onLane(ctx context.Context, c *batch.Call[rediscmd.Cmd, rediscmd.Result], l *lane, fresh bool) {
	var last bool // the lane takes the pool's one idle connection
	switch {
	case fresh && n.warm != nil:
		last, c.Err = n.warm.wait(ctx, c.Ctx())
		if c.Err == nil {
			c.Err = ctx.Err()
		}
	default:
		c.Err = ctx.Err()
	}
	if c.Err == nil {
		c.Err = c.Ctx().Err() // canceled before it was sent: never sent
	}
	if c.Err != nil {
		n.lanes.give(l, false, nil) // unused
		return
	}
	c.Res, c.Err = n.one(ctx, l.conn, &c.Cmd)
	// A lane that answered an earlier call is not checked before it is
	// used again within laneIdle: a server that closed its connection
	// meanwhile (a restart, CLIENT KILL, its idle timeout) fails the call
	// before any reply, with end of file or a reset. The call goes again,
	// once, at once, within the same ctx, through the pool, which checks
	// its idle connections (and so finds the others the server closed with
	// it) or dials, as rediscmd.Cmd.Again says (a SET NX as
	// driver.SetNXAgainScript, which counts the key its first send may have
	// set as set; the scripts as they are), as the redigo, rueidis and
	// valkeygo drivers send theirs: without it, a release right after a
	// server restart failed on the lane, and the key stayed for its TTL.
	// A repeated release that deletes nothing is no answer
	// (rediscmd.Cmd.Repeated).
	stale := l.sent && connalive.Broken(c.Err)
	n.lanes.give(l, true, c.Err) // a failed call closes the lane
	if stale && ctx.Err() == nil && c.Ctx().Err() == nil {
		first, again := c.Err, c.Cmd.Again()
		r, err := n.one(ctx, n.client, &again)
		c.Res, c.Err = c.Cmd.Repeated(r, err, first)
	}
	if last {
		n.warm.refill() // see warmer.refill; after the repeat, which the spare's PING would race for an idle connection
	}
}

// one sends cmd alone on s, the node's client or its lane.
func (n *node) one(ctx context.Context, s sender, cmd *rediscmd.Cmd) (rediscmd.Result, error) {
	c := send(ctx, s, cmd, false)
	if isNoScript(c.Err()) {
		c = send(ctx, s, cmd, true)
	}
	return result(cmd, c)
}

// send sends cmd on c, a client or a pipeline: SET, or its script by EVALSHA,
// or by EVAL when eval is set. The command is never resent after a network
// error (see noRetry).
func send(ctx context.Context, c sender, cmd *rediscmd.Cmd, eval bool) *redis.Cmd {
	var args []any
	s, ok := cmd.Script()
	switch {
	case !ok:
		args = []any{"SET", cmd.Key, cmd.Value, "NX", "PX", driver.Milliseconds(cmd.TTL)}
	case eval:
		args = scriptArgs("EVAL", s.Source(), cmd)
	default:
		args = scriptArgs("EVALSHA", boxedSHA1(s), cmd)
	}
	rc := routed(redis.NewCmd(ctx, args...))
	_ = c.Process(ctx, noRetry{rc}) // the error is rc's
	return rc
}

// routed returns cmd with its key step set (to 1, go-redis' default), which
// a *redis.ClusterClient otherwise reads from COMMAND before it sends a
// command: it asks random nodes of the cluster for COMMAND before its first
// command, and again before every command until one answers, bounded by 5 s
// of its own rather than the command's context and under a lock that every
// command waits on, so that one shard that hung held up the keys of every
// other (and a user without +command, as the README's least-privilege one,
// sent it before every command). The node's commands need no more than
// their key's slot, or a primary. Other clients ignore the step.
func routed[C interface{ SetStepCount(int8) }](cmd C) C {
	cmd.SetStepCount(1)
	return cmd
}

// noRetry is a command that go-redis never resends after a network error or
// a timeout: a ClusterClient resends such commands whatever its MaxRetries,
// and a command whose reply was lost has an unknown outcome (a resent
// release would find the key gone and report it not held). Redirections
// (MOVED, ASK) are still followed: the node that answers them did not run
// the command.
type noRetry struct{ *redis.Cmd }

func (noRetry) NoRetry() bool { return true }

// shas are the SHA1s of the drivers' scripts as interface values, boxed once:
// EVALSHA's first argument, which go-redis takes as an any.
var shas = func() map[string]any {
	m := make(map[string]any)
	for _, s := range []driver.Script{driver.ReleaseScript(), driver.ReleaseNotifyScript(), driver.ExtendScript(),
		driver.SetNXFenceScript(), driver.RaiseFenceScript(), driver.TTLScript()} {
		m[s.SHA1()] = s.SHA1()
	}
	return m
}()

// boxedSHA1 returns s's SHA1 as an interface value, without an allocation
// for the drivers' scripts.
func boxedSHA1(s driver.Script) any {
	if v, ok := shas[s.SHA1()]; ok {
		return v
	}
	return s.SHA1()
}

// scriptArgs returns the arguments of EVAL or EVALSHA for cmd's script. name
// and script are interface values so that a constant name costs no
// allocation.
func scriptArgs(name, script any, cmd *rediscmd.Cmd) []any {
	keys, argv := cmd.Keys(), cmd.Args()
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, name, script, len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	for _, a := range argv {
		args = append(args, a)
	}
	return args
}

// isNoScript reports whether err is the server's NOSCRIPT: it does not have
// the script yet, and the command must go by EVAL.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// result reads the reply of cmd.
func result(cmd *rediscmd.Cmd, c *redis.Cmd) (rediscmd.Result, error) {
	reply, err := c.Result()
	switch {
	case errors.Is(err, redis.Nil):
		reply = nil
	case err != nil:
		return rediscmd.Result{}, err
	}
	return cmd.Parse(reply)
}

// direct reports whether a command can run bounded by ctx without a watch
// (untildone.Do, a goroutine per call). go-redis bounds a command's I/O by
// ctx's deadline (with ContextTimeoutEnabled) but does not notice a
// cancellation. When the deadline is near (within batch.CancelLag, as the
// Redlock node timeout is by default), the command runs directly and a
// cancellation is seen by the deadline at the latest; so does one whose ctx
// cannot be canceled. A pipeline needs no watch: every caller in it waits
// for its own context.
func (n *node) direct(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return (ok && n.bounded && time.Until(d) <= batch.CancelLag) || ctx.Done() == nil
}

var _ driver.Queuer = (*node)(nil)

// Pending reports the commands waiting in the node's pipelining queues (see
// driver.Queuer): a cluster node's, one per shard, together.
func (n *node) Pending() driver.Pending {
	if n.batch == nil {
		return driver.Pending{}
	}
	p := n.batch.Pending()
	if n.shards != nil {
		p = n.shards.pending(p)
	}
	return p
}
