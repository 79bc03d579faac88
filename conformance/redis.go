package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// stallBound is how long a call on a stalled server may take beyond its
// context: generous, since CI machines are slow and shared.
const stallBound = 2 * time.Second

// RunRedis proves a Redis driver: it runs Run on nodes that d opens on fresh
// redis-server processes (one per node, started with redistest), then checks
// what every Redis driver's Open must do: take host:port and
// redis://[user:password@]host:port[/db] addresses, authenticate as an ACL
// user, never show a password, neither fail nor block when the server is down
// or stalled, bound every call by its context on a stalled server (and, for
// a node that queues its calls, driver.Queuer, by the network timeout it is
// given, driver.WithNetworkTimeout), bound by its own timeouts calls whose
// contexts have no deadline, those it pipelines too, and recover when the
// server does. A
// node closed with calls in flight on a
// stalled server returns from Close at once and ends them; one that queues
// its calls (driver.Queuer) sends none of those queued (see QueuedAtClose);
// one closed three times at once amid calls on a server that answers
// returns nil from each Close and never sends a call that failed with
// driver.ErrClosed.
//
// It makes the error replies a lock's commands meet in production with a
// real server in the state that gives each, and wants the same verdict from
// every driver, for calls with a long context and alone with redlock's
// default node timeout: READONLY on a node that became a read-only replica,
// OOM out of memory (where Extend and EvalRelease of the node's own key
// still succeed: Redis runs PEXPIRE and DEL then), WRONGTYPE for a key of
// another type (SetNX then answers false), BUSY while a script runs too
// long, LOADING while the server loads its dataset, and WRONGPASS after the
// user's password changed: each an error with the reply in its chain, for
// which driver.PermanentCode is the reply's code (BUSY and LOADING: ""),
// never a verdict; and the node works again once the server does. A call
// right after the server closed the node's connections must succeed, with
// a long context and alone with the node timeout.
//
// Every script is also run by many goroutines at once on a server that has
// none loaded, as after a restart or SCRIPT FLUSH: whether a driver sends
// commands one by one or pipelines them, each must fall back to EVAL and
// return the right result.
//
// It watches what reaches the server, too: with MONITOR, that every lock
// call runs one atomic command on the key (one SET NX PX, or one script,
// EVALSHA then EVAL after NOSCRIPT counting once), never a client-side GET,
// DEL, SETNX, PEXPIRE or SET, two scripts, or MULTI/EXEC; with PTTL, that
// TTLs are sent in milliseconds, not rounded up to whole seconds (EX,
// EXPIRE); with INFO, that a driver.Identifier names the server by its
// run_id; with CLIENT LIST, that
// Close closes every connection of the node, its pub/sub connection
// included. As an ACL user
// on a key outside the user's pattern, every method must return an error
// for which driver.PermanentCode is "NOPERM", and no error may show a
// password or the lock value passed to the call.
//
// A server at its maxclients limit, which answers a new connection with
// "-ERR max number of clients reached" and closes it, must fail every call
// with an error that says so (over TLS, where the server refuses without a
// word, one that names maxclients as the likely cause), and the node must
// work once the server takes clients again.
//
// It also checks TLS: Run again over rediss:// addresses whose tls_ca_file,
// tls_cert_file and tls_key_file parameters name a CA and a client
// certificate generated for the test (the servers require client
// certificates); a server whose certificate the CA did not sign, or a client
// without a certificate where one is required, fail every call with the TLS
// error in the chain (an x509.UnknownAuthorityError, say); a handshake with a
// stalled server ends with the call's context; and, for a driver that
// implements driver.ConfigOpener, OpenConfig with a driver.Config's TLS
// connects with TLS whatever the address's scheme.
//
// With WithCluster, it also runs Run on nodes that are Redis Clusters, and
// takes and releases locks while their slots migrate (see WithCluster).
//
// The addresses are those of this module's drivers (see Addr.URL); a driver
// that takes others passes WithAddress.
//
// The subtests Node and TLS/Node, which run Run on servers of their own and
// only wait on them, are parallel (t.Parallel): they run with each other once
// the test that called RunRedis has returned, after the others, which run
// one at a time (those that bound a call's time among them).
func RunRedis(t *testing.T, d driver.Driver, opts ...RedisOption) {
	t.Helper()
	s := &redisSuite{d: d, format: Addr.URL}
	for _, o := range opts {
		o(s)
	}
	if s.onlyCluster {
		s.runCluster(t)
		return
	}
	t.Run("Node", func(t *testing.T) {
		t.Parallel()
		Run(t, func(t *testing.T) driver.Node { return s.open(t, hostAddr(t, redistest.NewServer(t))) })
	})
	t.Run("TLS/Node", func(t *testing.T) {
		t.Parallel()
		Run(t, func(t *testing.T) driver.Node {
			srv := redistest.NewServer(t, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired), redistest.WithPassword(password))
			return s.open(t, fullAddr(t, srv))
		})
	})
	if s.cluster {
		s.runCluster(t)
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, s *redisSuite)
	}{
		{"Open/Password", openPassword},
		{"Open/ACLUser", openACLUser},
		{"Open/Database", openDatabase},
		{"Open/RefusedConcurrentCalls", openRefusedConcurrent},
		{"Open/MalformedHidesPassword", openMalformed},
		{"Down/NeitherFailsNorBlocks", downNeitherFailsNorBlocks},
		{"Refused/MaxClients", refusedMaxClients},
		{"Stalled/DeadlineBoundsCalls", stalledDeadline},
		{"Stalled/CancelBoundsCalls", stalledCancel},
		{"Stalled/NetworkTimeoutBoundsCalls", stalledNetworkTimeout},
		{"Stalled/NoDeadlineCallsEnd", stalledNoDeadline},
		{"Stalled/Recovers", stalledRecovers},
		{"Stalled/CloseDoesNotWait", stalledClose},
		{"Stalled/CloseSendsNoQueuedCall", stalledCloseQueued},
		{"Close/ReleasesConnections", closeReleasesConnections},
		{"Close/Concurrent", closeConcurrent},
		{"TTL/Milliseconds", ttlMilliseconds},
		{"TTLer/NoExpiry", ttlNoExpiry},
		{"Identifier/NamesServer", identityNamesServer},
		{"Reconnects", reconnects},
		{"Reconnects/AfterIdle", reconnectsAfterIdle},
		{"Reconnects/RightAfterKill", reconnectsRightAfterKill},
		{"Reconnects/RightAfterKillNodeTimeout", reconnectsRightAfterKillNodeTimeout},
		{"Replies/ReadOnly", repliesReadOnly},
		{"Replies/OutOfMemory", repliesOutOfMemory},
		{"Replies/WrongType", repliesWrongType},
		{"Replies/Busy", repliesBusy},
		{"Replies/Loading", repliesLoading},
		{"Replies/PasswordChanged", repliesPasswordChanged},
		{"Scripts/Concurrent", scriptsConcurrent},
		{"Commands/Atomic", commandsAtomic},
		{"Notifier/ReleaseWithoutSPUBLISH", releaseWithoutSPublish},
		{"Fencer/ReadsLegacyCounter", fenceReadsLegacyCounter},
		{"Fencer/ReadsOldCountersAsFarAsAllowed", fenceReadsOldCounters},
		{"Fencer/CounterNotNumberIsPermanent", fenceCounterNotNumber},
		{"TLS/OpenConfig", tlsOpenConfig},
		{"TLS/UnknownCA", tlsUnknownCA},
		{"TLS/ClientCertRequired", tlsClientCertRequired},
		{"TLS/Stalled/DeadlineBoundsCalls", tlsStalledDeadline},
		{"TLS/Stalled/CancelBoundsCalls", tlsStalledCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), subtestTimeout)
			defer cancel()
			tc.fn(t, ctx, s)
		})
	}
}

// redisSuite is what RunRedis's subtests test: a driver, and how to write
// its addresses.
type redisSuite struct {
	d             driver.Driver
	format        func(Addr) string
	custom        bool   // format is the driver's, from WithAddress
	cluster       bool   // WithCluster
	onlyCluster   bool   // OnlyCluster
	skipMigration string // SkipClusterMigration's reason
}

// open opens the node for a, and closes it at the end of the test.
func (s *redisSuite) open(t *testing.T, a Addr) driver.Node {
	t.Helper()
	addr := s.format(a)
	n, err := s.d.Open(addr)
	if err != nil {
		t.Fatalf("Open(%q) = %v", addr, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

const password = "pw-s3cret-never-shown"

// hidesPassword fails the test if text shows the password, or any of values:
// the lock values passed to the call whose error text is. A lock value is
// its holder's secret: whoever reads it can release or extend the lock.
func hidesPassword(t *testing.T, what, text string, values ...string) {
	t.Helper()
	if strings.Contains(text, password) {
		t.Errorf("%s %q shows the password: a driver must never show one", what, text)
	}
	for _, v := range values {
		if strings.Contains(text, v) {
			t.Errorf("%s %q shows the lock value %q passed to the call: a driver must never show one", what, text, v)
		}
	}
}

func openPassword(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	a := hostAddr(t, srv)
	a.Password = password
	good := s.open(t, a)
	if s, ok := good.(interface{ String() string }); ok {
		hidesPassword(t, "String()", s.String())
	}
	k := key(t)
	if ok := must(t, "SetNX with the right password")(good.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX with the right password = false, want true")
	}
	wrong := a
	wrong.Password = "wrong-" + password
	for _, addr := range []Addr{wrong, hostAddr(t, srv)} {
		bad := s.open(t, addr)
		v := value()
		ok, err := bad.SetNX(ctx, key(t), v, time.Minute)
		if err == nil {
			t.Fatalf("SetNX with a wrong or missing password = %v, nil; want an error", ok)
		}
		hidesPassword(t, "the error", err.Error(), v)
	}
}

func openDatabase(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	k := key(t)
	a := hostAddr(t, srv)
	a.DB = 2
	db2 := s.open(t, a)
	must(t, "SetNX on /2")(db2.SetNX(ctx, k, value(), time.Minute))
	if ok := must(t, "SetNX on /2 again")(s.open(t, a).SetNX(ctx, k, value(), time.Minute)); ok {
		t.Fatal("SetNX on a key held in database 2, through another node on /2 = true, want false")
	}
	a.DB = 0
	if ok := must(t, "SetNX on /0")(s.open(t, a).SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX on database 0 of a key held only in database 2 = false, want true: redis://host:port/2 must select database 2")
	}
}

// openRefusedConcurrent sends concurrent calls through nodes whose
// connections the server refuses at their handshake (a wrong password, a
// database out of range): every call must fail, with the server's reply
// where driver.PermanentCode finds it (retrying cannot fix either). A call that answered (false, nil) would say
// that another holds a key no one holds; a driver that sends concurrent
// calls together (a pipeline) must not lose the handshake's error.
func openRefusedConcurrent(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	wrong := hostAddr(t, srv)
	wrong.Password = "wrong-" + password
	outOfRange := hostAddr(t, srv)
	outOfRange.Password, outOfRange.DB = password, 99
	for _, c := range []struct {
		name string
		a    Addr
	}{{"WrongPassword", wrong}, {"DatabaseOutOfRange", outOfRange}} {
		t.Run(c.name, func(t *testing.T) {
			n := s.open(t, c.a)
			const calls = 32
			errs := make(chan error, calls)
			var wg sync.WaitGroup
			for range calls {
				wg.Go(func() {
					v := value()
					ok, err := n.SetNX(ctx, key(t), v, time.Minute)
					if err == nil {
						err = fmt.Errorf("SetNX = %v, nil; want an error", ok)
						if ok {
							t.Errorf("%v", err)
						}
						errs <- err
						return
					}
					hidesPassword(t, "the error", err.Error(), v)
					if driver.PermanentCode(err) == "" {
						errs <- fmt.Errorf("SetNX's error %q has no code driver.PermanentCode finds", err)
					}
				})
			}
			wg.Wait()
			close(errs)
			failed := 0
			var first error
			for err := range errs {
				if failed++; first == nil {
					first = err
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d concurrent calls through a node whose connections are refused: %v", failed, calls, first)
			}
		})
	}
}

func openMalformed(t *testing.T, _ context.Context, s *redisSuite) {
	addrs := []string{
		"", "127.0.0.1:0", "127.0.0.1:99999", "redis://:" + password + "@127.0.0.1:1/x",
		"redis://u:" + password + "@127.0.0.1:99999", "http://u:" + password + "@127.0.0.1:1",
	}
	if s.custom {
		// The driver's own grammar: a port out of range is malformed in any.
		addrs = []string{
			s.format(Addr{Host: "127.0.0.1", Port: "99999", Password: password}),
			s.format(Addr{Host: "127.0.0.1", Port: "99999", Username: "u", Password: password}),
		}
	}
	for _, addr := range addrs {
		n, err := s.d.Open(addr)
		if err == nil {
			n.Close()
			t.Errorf("Open(%q) succeeded, want an error for a malformed address", addr)
			continue
		}
		hidesPassword(t, "Open's error", err.Error())
	}
}

// deadAddr returns a loopback address on which nothing listens.
func deadAddr(t *testing.T) Addr {
	t.Helper()
	host, port, err := net.SplitHostPort(redistest.DownAddrs(t, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	return Addr{Host: host, Port: port}
}

func downNeitherFailsNorBlocks(t *testing.T, ctx context.Context, s *redisSuite) {
	start := time.Now()
	n := s.open(t, deadAddr(t))
	if took := time.Since(start); took > stallBound {
		t.Fatalf("Open(address nobody listens on) took %v: Open must not connect", took)
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	for call, err := range Calls(cctx, n, key(t)) {
		if err == nil {
			t.Errorf("%s on a down server: error = nil, want an error", call)
		}
	}
	if took := time.Since(start); took > 500*time.Millisecond+stallBound {
		t.Errorf("three calls on a down server with a 500ms deadline took %v", took)
	}
}

// stalled returns a paused server, started with opts, and a node opened on
// it before (warm: it has connected, and, a driver.Notifier, subscribed
// once, so that its pub/sub connection may be up) or after the pause. A
// warm node's Subscribe must still wait for the stalled server's
// confirmation, not just send SSUBSCRIBE on a connection it has.
func stalled(t *testing.T, ctx context.Context, s *redisSuite, warm bool, opts ...redistest.Option) (*redistest.Server, driver.Node) {
	t.Helper()
	srv := redistest.NewServer(t, opts...)
	addr := fullAddr(t, srv)
	var n driver.Node
	if warm {
		n = s.open(t, addr)
		must(t, "SetNX before the pause")(n.SetNX(ctx, key(t), value(), time.Minute))
		if nn, ok := n.(driver.Notifier); ok {
			cancel, err := nn.Subscribe(ctx, key(t), make(chan struct{}, 1))
			if err != nil {
				t.Fatalf("Subscribe before the pause: unexpected error %v", err)
			}
			cancel()
		}
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })
	if !warm {
		start := time.Now()
		n = s.open(t, addr)
		if took := time.Since(start); took > stallBound {
			t.Fatalf("Open(stalled server) took %v: Open must not connect", took)
		}
	}
	return srv, n
}

func stalledDeadline(t *testing.T, ctx context.Context, s *redisSuite) {
	stalledCallsEnd(t, ctx, s, false)
}

// stalledCallsEnd checks that each call on a stalled server started with
// opts, both before the node connected and after, ends with its context,
// which ends 200ms after the call began: at its deadline or, with cancel,
// canceled.
func stalledCallsEnd(t *testing.T, ctx context.Context, s *redisSuite, cancel bool, opts ...redistest.Option) {
	const after = 200 * time.Millisecond
	how, want, wantName := fmt.Sprintf("with a %v deadline", after), context.DeadlineExceeded, "context.DeadlineExceeded"
	if cancel {
		how, want, wantName = fmt.Sprintf("canceled after %v", after), context.Canceled, "context.Canceled"
	}
	for _, warm := range []bool{true, false} {
		_, n := stalled(t, ctx, s, warm, opts...)
		for name, call := range methods(n, key(t)) {
			cctx, done := endingContext(ctx, after, cancel)
			took, returned, err := boundedCall(cctx, call, after+stallBound)
			done()
			on := fmt.Sprintf("%s on a stalled server (connected before: %v) %s", name, warm, how)
			if !returned {
				t.Errorf("%s had not returned %v later: a call must end with its context, never wait for the server beyond it", on, took)
				continue
			}
			if !errors.Is(err, want) {
				t.Errorf("%s: error = %v, want one matching %s%s", on, err, wantName, subscribeRule(name, err))
			}
			if took > after+stallBound {
				t.Errorf("%s took %v: a call must end with its context", on, took)
			}
		}
	}
}

// endingContext returns a context that ends after: at its deadline or, with
// cancel, canceled (it has no deadline then: only the cancel can end it);
// and the function to call once done with it.
func endingContext(ctx context.Context, after time.Duration, cancel bool) (context.Context, func()) {
	if !cancel {
		return context.WithTimeout(ctx, after)
	}
	cctx, stop := context.WithCancel(ctx)
	timer := time.AfterFunc(after, stop)
	return cctx, func() {
		timer.Stop()
		stop()
	}
}

// stalledNetworkTimeout checks the calls of a node that queues commands
// (driver.Queuer) on a stalled server it is connected to, given a network
// timeout (driver.WithNetworkTimeout) and a context that ends much later:
// each must fail once the timeout has passed on the network, as package
// redlock counts on. redlock gives such a node the node timeout that way, not
// as the context's deadline, which for a SET or an extension is the lock's
// validity and for a release the key's expiry (see driver.Queuer): a node
// that bounded its calls by the context alone would hold a TryLock, or an
// Unlock, for up to a TTL on one stalled server instead of the node timeout.
// Subscribe and TTL, which redlock bounds by the context's deadline, are not
// checked here (Stalled/DeadlineBoundsCalls checks them).
func stalledNetworkTimeout(t *testing.T, ctx context.Context, s *redisSuite) {
	const timeout = 200 * time.Millisecond
	_, n := stalled(t, ctx, s, true)
	if _, ok := n.(driver.Queuer); !ok {
		t.Skipf("%T is not a driver.Queuer: every call is bounded by its context", n)
	}
	for name, call := range methods(n, key(t)) {
		if name == "Subscribe" || name == "TTL" {
			continue
		}
		// The context ends long after the network timeout, well within
		// the wait below: a node that ignored the timeout returns then,
		// with the context's error, and fails the check all the same.
		cctx, cancel := context.WithTimeout(driver.WithNetworkTimeout(ctx, timeout), 3*stallBound)
		took, returned, err := boundedCall(cctx, call, timeout+stallBound)
		cancel()
		switch {
		case !returned || took > timeout+stallBound:
			t.Errorf("%s on a stalled server, with a %v network timeout (driver.WithNetworkTimeout) and a context that ends %v later, had not returned %v later: a node that queues commands (driver.Queuer) must bound a command's time on the network by the network timeout it is given, not by its context alone", name, timeout, 3*stallBound, took)
		case err == nil:
			t.Errorf("%s on a stalled server, with a %v network timeout: error = nil, want the timeout's", name, timeout)
		}
	}
}

// subscribeRule explains a Subscribe that succeeded on a stalled server.
func subscribeRule(call string, err error) string {
	if call != "Subscribe" || err != nil {
		return ""
	}
	return ": Subscribe must return only once the server has confirmed the subscription (a release published before it would be missed), and a stalled server confirms nothing"
}

func stalledCancel(t *testing.T, ctx context.Context, s *redisSuite) {
	stalledCallsEnd(t, ctx, s, true)
}

// stalledNoDeadline checks calls made together on a stalled server with
// contexts that have no deadline and are not canceled while they run: each
// must fail by the node's own timeouts (a read timeout, a liveness check),
// those the node sends together in one pipeline as those it sends alone.
// What no context bounds, the node must: a call that waited for the server
// would hold its goroutine, and a connection, for as long as the server does
// not answer, past the node's Close. (redigo's pipelines read their replies
// without any deadline in that case, while its calls sent alone failed after
// its 3s read timeout.) The calls must return before the subtest's own
// deadline, with an error.
func stalledNoDeadline(t *testing.T, ctx context.Context, s *redisSuite) {
	_, n := stalled(t, ctx, s, true)
	// More calls than a node sends alone at once: the others queue and go
	// together. Their context has neither a deadline nor a cancel while
	// they run.
	const calls = 8
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, calls)
	k := key(t)
	for i := range calls {
		name := []string{"SetNX", "Extend", "EvalRelease"}[i%3]
		go func() {
			var err error
			ki := fmt.Sprint(k, i)
			switch name {
			case "SetNX":
				_, err = n.SetNX(cctx, ki, value(), time.Minute)
			case "Extend":
				_, err = n.Extend(cctx, ki, value(), time.Minute)
			default:
				_, err = n.EvalRelease(cctx, ki, value())
			}
			results <- result{name, err}
		}()
	}
	for i := range calls {
		select {
		case r := <-results:
			if r.err == nil {
				t.Errorf("%s on a stalled server, with a context without deadline: error = nil, want the node's timeout", r.name)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d calls made together on a stalled server, with contexts that have no deadline, had not returned after %v: a node must bound by its own timeouts what a context does not, for calls it pipelines as for calls it sends alone", calls-i, calls, subtestTimeout)
		}
	}
}

func stalledRecovers(t *testing.T, ctx context.Context, s *redisSuite) {
	srv, n := stalled(t, ctx, s, true)
	const deadline = 100 * time.Millisecond
	cctx, cancel := context.WithTimeout(ctx, deadline)
	k := key(t)
	took, returned, _ := boundedCall(cctx, func(ctx context.Context) error { Calls(ctx, n, k); return nil }, deadline+stallBound)
	cancel()
	if !returned {
		t.Fatalf("calls on a stalled server with a %v deadline had not returned %v later: a call must end with its context, never wait for the server beyond it", deadline, took)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, n, key(t), 5*time.Second) {
		t.Fatal("SetNX after the server resumed: still failing after 5s: a node must recover when its server does")
	}
}

// closeBound is how long Close may take on a node whose server does not
// answer: it has nothing to wait for (a Client closes its nodes at once, and
// a node's Close that waited for a reply would hold it up for as long).
const closeBound = 500 * time.Millisecond

// stalledClose closes a node, with connections open, whose server does not
// answer: Close must not wait for it.
func stalledClose(t *testing.T, ctx context.Context, s *redisSuite) {
	_, n := stalled(t, ctx, s, true)
	took, returned, _ := boundedCall(ctx, func(context.Context) error { return n.Close() }, closeBound+stallBound)
	switch {
	case !returned:
		t.Fatalf("Close of a node whose server does not answer had not returned %v later: Close must not wait for the server", took)
	case took > closeBound:
		t.Fatalf("Close of a node whose server does not answer took %v, more than %v: Close must not wait for the server", took, closeBound)
	}
}

// boundedCall runs call with ctx and waits at most wait for it to return. It
// returns how long it waited, whether call returned, and call's error. A
// call that does not return within wait is left running: a node that waits
// for a stalled server beyond the call's context would otherwise hold the
// suite until go test's timeout, which reports no rule. It ends when the
// test's cleanup resumes the server or closes the node.
func boundedCall(ctx context.Context, call func(context.Context) error, wait time.Duration) (took time.Duration, returned bool, err error) {
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err = <-done:
		return time.Since(start), true, err
	case <-timer.C:
		return time.Since(start), false, nil
	}
}

// closeConcurrent closes a node three times at once while calls are in
// flight on a server that answers: every Close returns nil, and so does a
// fourth after them; every call returns; a SetNX of a fresh key answers
// true or fails, never (false, nil); one that failed with an error matching
// driver.ErrClosed was never sent (its key is not set); and a call after
// Close matches driver.ErrClosed. Run with -race, it also finds a Close that
// races with itself or with the calls.
func closeConcurrent(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	must(t, "SetNX before Close")(n.SetNX(ctx, key(t), value(), time.Minute))
	const callers, calls = 16, 20
	prefix := key(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		notOK []string // keys whose SetNX failed with ErrClosed
	)
	start := make(chan struct{})
	answered := make(chan struct{}) // closed once a call has returned: Close comes amid the others
	var once sync.Once
	for g := range callers {
		wg.Go(func() {
			<-start
			for i := range calls {
				k := fmt.Sprintf("%s-%d-%d", prefix, g, i)
				ok, err := n.SetNX(ctx, k, value(), time.Minute)
				once.Do(func() { close(answered) })
				switch {
				case err == nil && !ok:
					t.Errorf("SetNX(%s, a fresh key) while the node closed = false, nil; want true or an error: a Node must never say held for a key nobody holds", k)
				case errors.Is(err, driver.ErrClosed):
					mu.Lock()
					notOK = append(notOK, k)
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	select {
	case <-answered:
	case <-ctx.Done():
		t.Fatalf("no SetNX had returned by the end of the test's context")
	}
	var closes sync.WaitGroup
	for range 3 {
		closes.Go(func() {
			if err := n.Close(); err != nil {
				t.Errorf("Close() at once with two others, calls in flight = %v, want nil", err)
			}
		})
	}
	closes.Wait()
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatalf("calls in flight at Close had not returned by the end of the test's context")
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close() after three = %v, want nil", err)
	}
	if ok, err := n.SetNX(ctx, key(t), value(), time.Minute); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("SetNX after Close = %v, %v; want an error matching driver.ErrClosed", ok, err)
	}
	for _, k := range notOK {
		if got := serverDo(t, ctx, srv, "EXISTS", k); got != int64(0) {
			t.Errorf("SetNX(%s) failed with an error matching driver.ErrClosed, but the key is set: ErrClosed says that a call was never sent", k)
		}
	}
}

// closeReleasesConnections opens several connections through a node (calls
// together, and a subscription when the node is a driver.Notifier), closes
// it, and watches the server's CLIENT LIST until they are gone: Close must
// release every connection of the node, its pub/sub connection included. A
// node that keeps no connection once its calls returned (one that dials for
// each call) passes: it has nothing to release; a Notifier's subscription
// must hold one.
func closeReleasesConnections(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := n.SetNX(ctx, key(t), value(), time.Minute); err != nil {
				t.Errorf("SetNX: unexpected error %v", err)
			}
		})
	}
	wg.Wait()
	if nn, ok := n.(driver.Notifier); ok {
		stop, err := nn.Subscribe(ctx, key(t), make(chan struct{}, 1))
		if err != nil {
			t.Fatalf("Subscribe: unexpected error %v", err)
		}
		defer stop()
	}
	open, list := clientsOf(t, ctx, srv)
	if open == 0 {
		if _, ok := n.(driver.Notifier); ok {
			t.Fatalf("no connection of the node in the server's CLIENT LIST with a subscription open: a Notifier's subscription holds a pub/sub connection until canceled:\n%s", list)
		}
		// A node that keeps no connection between its calls (one that
		// dials for each) has none for Close to release.
		if err := n.Close(); err != nil {
			t.Fatalf("Close() = %v, want nil", err)
		}
		return
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	const bound = 5 * time.Second
	for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		left, list := clientsOf(t, ctx, srv)
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the node's %d connections still open %v after Close: Close must release the node's connections, its pub/sub connection included; CLIENT LIST:\n%s", left, open, bound, list)
		}
	}
}

// clientsOf returns how many connections srv has besides the one that asks
// (CLIENT LIST), and their list.
func clientsOf(t *testing.T, ctx context.Context, srv *redistest.Server) (int, string) {
	t.Helper()
	reply, err := srv.Do(ctx, "CLIENT", "LIST")
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	list, _ := reply.(string)
	var others []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if line != "" && !strings.Contains(line, " cmd=client|list ") {
			others = append(others, line)
		}
	}
	return len(others), strings.Join(others, "\n")
}

// ttlMilliseconds reads through the server the time to live that SetNX,
// Extend and SetNXFence give a key, with a TTL that is not whole seconds: it
// must be at most the TTL asked, and more than zero. A driver that rounded
// TTLs up to seconds (SET EX, EXPIRE) would keep a lock after its holder
// believes it expired; the tests of expiry cannot tell.
func ttlMilliseconds(t *testing.T, ctx context.Context, s *redisSuite) {
	const ttl = 2500 * time.Millisecond
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	pttl := func(call, k string) {
		t.Helper()
		reply, err := srv.Do(ctx, "PTTL", k)
		if err != nil {
			t.Fatalf("PTTL: %v", err)
		}
		if ms, _ := reply.(int64); ms <= 0 || ms > driver.Milliseconds(ttl) {
			t.Errorf("%s: the server's PTTL of the key right after = %v, want one in (0, %d]: a Node must send TTLs in milliseconds (PX, PEXPIRE), never rounded up to whole seconds (EX, EXPIRE)", call, reply, driver.Milliseconds(ttl))
		}
	}
	k, v := key(t), value()
	call := fmt.Sprintf("SetNX(ttl=%v)", ttl)
	if ok := must(t, call)(n.SetNX(ctx, k, v, ttl)); !ok {
		t.Fatalf("%s = false, want true", call)
	}
	pttl(call, k)
	k = key(t)
	must(t, "SetNX(ttl=1m)")(n.SetNX(ctx, k, v, time.Minute))
	call = fmt.Sprintf("Extend(value, %v) on a key with 1m to live", ttl)
	if ok := must(t, call)(n.Extend(ctx, k, v, ttl)); !ok {
		t.Fatalf("%s = false, want true", call)
	}
	pttl(call, k)
	if f, ok := n.(driver.Fencer); ok {
		k = key(t)
		call = fmt.Sprintf("SetNXFence(ttl=%v)", ttl)
		if ok, _ := setNXFence(t, ctx, f, k, v, driver.FenceKey(k), ttl); !ok {
			t.Fatalf("%s = false, want true", call)
		}
		pttl(call, k)
	}
}

// ttlNoExpiry asks a TTLer the time to live of a key that holds the value
// without one (set by hand: PTTL -1): an error, since a lock key always has
// one, never a duration reported as held.
func ttlNoExpiry(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	tn := as[driver.TTLer](t, s.open(t, hostAddr(t, srv)))
	k, v := key(t), value()
	if _, err := srv.Do(ctx, "SET", k, v); err != nil {
		t.Fatal(err)
	}
	if d, held, err := tn.TTL(ctx, k, v); err == nil {
		t.Errorf("TTL of a key that holds the value without a time to live (PTTL -1) = %v, %v, nil; want an error: a lock key always has a time to live, and one without it is no lock the Node can vouch for", d, held)
	}
}

// identityNamesServer checks that a driver.Identifier names the server it
// reaches by what the server says, "run:" and the run_id of its INFO, so
// that two addresses of one server (a host name and an IP, say) share an
// ID; an ID made up on the client (from the address, say) is distinct for
// every address, and redlock would count one server twice.
func identityNamesServer(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	ider := as[driver.Identifier](t, s.open(t, hostAddr(t, srv)))
	reply, err := srv.Do(ctx, "INFO", "server")
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	info, _ := reply.(string)
	want := driver.IdentityOf(info, "")
	if len(want) != 1 {
		t.Fatalf("INFO server has no run_id:\n%s", info)
	}
	ids, err := ider.Identity(ctx)
	if err != nil {
		t.Fatalf("Identity: %v", err)
	}
	if !slices.Contains(ids, want[0]) {
		t.Fatalf("Identity of a node on one server = %q, want one that includes the server's run_id, %q (INFO server): an ID must come from the server, so that two addresses of one server share it (see driver.IdentityOf)", ids, want[0])
	}
}

// eventually reports whether SetNX on k succeeds within the given time of
// retries.
func eventually(ctx context.Context, n driver.Node, k string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		ok, err := n.SetNX(cctx, k, value(), time.Minute)
		cancel()
		if err == nil && ok {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func reconnects(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	must(t, "SetNX before the connections are killed")(n.SetNX(ctx, key(t), value(), time.Minute))
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, n, key(t), 5*time.Second) {
		t.Fatal("SetNX after the server closed every connection: still failing after 5s: a node must reconnect")
	}
}

// idleWindow is how long a node's connection may sit unused and still fail
// the next call when the server closed it meanwhile: the drivers check a
// connection idle for a second or more without a round trip, before using it.
const idleWindow = time.Second

// idleRule is what reconnectsAfterIdle's failures say.
const idleRule = "no call may fail because the server closed a connection while it sat idle; a Node must check an idle connection before it reuses it"

// reconnectsAfterIdle closes every connection of the server while the node
// is idle (a restart, CLIENT KILL or the server's timeout would): after
// idleWindow, no call may fail for it, the first included, whether the
// node's calls come one at a time or together.
func reconnectsAfterIdle(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	const together = 16
	calls := func(what string) {
		t.Helper()
		for i := range 3 {
			if ok, err := n.SetNX(ctx, key(t), value(), time.Minute); err != nil || !ok {
				t.Errorf("%s, call %d one at a time: SetNX = %v, %v; want true: %s", what, i, ok, err, idleRule)
			}
		}
		var wg sync.WaitGroup
		for range together {
			wg.Go(func() {
				if ok, err := n.SetNX(ctx, key(t), value(), time.Minute); err != nil || !ok {
					t.Errorf("%s, calls together: SetNX = %v, %v; want true: %s", what, ok, err, idleRule)
				}
			})
		}
		wg.Wait()
	}
	calls("before the connections were closed") // several connections, pooled
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(idleWindow + 200*time.Millisecond)
	calls("after the server closed the idle connections")
}

// reconnectsRightAfterKill closes every connection of the server (a
// restart, CLIENT KILL) just after the node used them, and calls at once:
// no release or extension may fail for it, the first included, one at a
// time or together. A node that hands out a connection used less than a
// second before without checking it must send such a call again on a live
// one when it fails there before any reply: Redlock's release right after a
// server restart otherwise fails on every node, and the key stays for its
// TTL when the Client closes next; a TryLock right after it fails. A SET NX
// goes again too, as one that counts a key holding its value as set (see
// driver.SetNXAgainScript).
func reconnectsRightAfterKill(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	const rule = "no call may fail because the server closed the node's connections before it was made; a Node must send it again on a live connection"
	const together = 16
	held := make([]string, together)
	v := value()
	for i := range held {
		held[i] = fmt.Sprintf("%s-%d", key(t), i)
	}
	kill := func() {
		t.Helper()
		if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
			t.Fatal(err)
		}
	}
	// Several connections, all just used.
	var wg sync.WaitGroup
	for _, k := range held {
		wg.Go(func() {
			if ok, err := n.SetNX(ctx, k, v, time.Minute); err != nil || !ok {
				t.Errorf("SetNX before the kill = %v, %v; want true", ok, err)
			}
		})
	}
	wg.Wait()
	kill()
	if ok, err := n.Extend(ctx, held[0], v, time.Minute); err != nil || !ok {
		t.Errorf("Extend right after the kill = %v, %v; want true: %s", ok, err, rule)
	}
	kill()
	// A SET NX too: sent again, it must count a key that its first send set
	// (the server may run a command and then close the connection) as set,
	// never as refused, which redlock reads as a key never set (this
	// module's drivers send driver.SetNXAgainScript).
	if ok, err := n.SetNX(ctx, key(t)+"-set", v, time.Minute); err != nil || !ok {
		t.Errorf("SetNX right after the kill = %v, %v; want true: %s", ok, err, rule)
	}
	if f, isFencer := n.(driver.Fencer); isFencer {
		kill()
		k := key(t) + "-fenced"
		if ok, _, err := f.SetNXFence(ctx, k, v, time.Minute, driver.FenceKey(k)); err != nil || !ok {
			t.Errorf("SetNXFence right after the kill = %v, %v; want true: %s", ok, err, rule)
		}
	}
	kill()
	for _, k := range held {
		wg.Go(func() {
			if ok, err := n.EvalRelease(ctx, k, v); err != nil || !ok {
				t.Errorf("EvalRelease right after the kill, calls together = %v, %v; want true: %s", ok, err, rule)
			}
		})
	}
	wg.Wait()
}

// reconnectsRightAfterKill's rule holds for calls sent as a redlock.Client
// sends them, too: alone, each bounded by the default node timeout
// (redlock.MaxNodeTimeout, TTL/10 at most), which is short enough that a
// driver may send such a call on a path of its own (a connection kept for
// lone calls, read on the caller's goroutine) rather than the one calls with
// longer contexts take. A lone call is made just before each kill, so that
// the node's connection for such calls was used less than a second before.
// A call that ends by its deadline proves nothing (a loaded machine may take
// that long) and the round is made again, with a fresh key; five such rounds
// in a row fail the test.
func reconnectsRightAfterKillNodeTimeout(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	const rule = "no call may fail because the server closed the node's connections just after it used them; a Node must send it again on a live connection, also when the call's deadline is as near as a redlock.Client's node timeout"
	const rounds = 5
	v := value()
	check := func(name string, call func(ctx context.Context, k string) (bool, error)) {
		t.Helper()
		for range rounds {
			k := key(t)
			lctx, cancel := context.WithTimeout(ctx, redlock.MaxNodeTimeout)
			_, err := n.SetNX(lctx, k, v, time.Minute) // the lone call that uses the node's connection
			cancel()
			if err != nil {
				continue // its deadline on a loaded machine, say: not the rule's
			}
			if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, redlock.MaxNodeTimeout)
			ok, err := call(cctx, k)
			ended := deadlinePassed(cctx)
			cancel()
			switch {
			case err != nil && ended && errors.Is(err, context.DeadlineExceeded):
				continue // its deadline: proves nothing
			case err != nil || !ok:
				t.Errorf("%s alone, with a %v deadline, right after the kill = %v, %v; want true: %s", name, redlock.MaxNodeTimeout, ok, err, rule)
			}
			return
		}
		t.Errorf("%s alone, with a %v deadline, right after the kill: %d rounds ended by their deadlines, none proved anything", name, redlock.MaxNodeTimeout, rounds)
	}
	check("Extend", func(ctx context.Context, k string) (bool, error) { return n.Extend(ctx, k, v, time.Minute) })
	check("EvalRelease", func(ctx context.Context, k string) (bool, error) { return n.EvalRelease(ctx, k, v) })
	check("SetNX", func(ctx context.Context, k string) (bool, error) { return n.SetNX(ctx, k+"-set", v, time.Minute) })
	if f, isFencer := n.(driver.Fencer); isFencer {
		check("SetNXFence", func(ctx context.Context, k string) (bool, error) {
			k += "-fenced"
			ok, _, err := f.SetNXFence(ctx, k, v, time.Minute, driver.FenceKey(k))
			return ok, err
		})
	}
}

// openACLUser checks that redis://user:password@ authenticates as that ACL
// user, on the node's command connections and on its pub/sub connection, and
// that no error shows either password.
func openACLUser(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password)) // no unauthenticated access
	const user = "locker"
	userPassword := "acl-" + password
	if _, err := srv.Do(ctx, "ACL", "SETUSER", user, "on", ">"+userPassword, "~acl:*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	a := hostAddr(t, srv)
	a.Username, a.Password = user, userPassword
	n := s.open(t, a)
	if s, ok := n.(fmt.Stringer); ok {
		hidesPassword(t, "String()", s.String())
	}
	k := "acl:" + key(t)
	if ok := must(t, "SetNX as the ACL user")(n.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX as the ACL user = false, want true")
	}
	// The user may only touch acl:*, unlike the default user: a refusal
	// proves the node authenticated as the user. Every method must return
	// the server's NOPERM where driver.PermanentCode finds it: (false, nil)
	// would say that another holds the key, and an error that drops the
	// reply would make redlock retry what can never succeed.
	v := value()
	v0 := value()
	_, err := n.SetNX(ctx, key(t), v0, time.Minute)
	if driver.PermanentCode(err) != "NOPERM" {
		t.Fatalf("SetNX as the ACL user on a key outside its pattern: error = %v, want one for which driver.PermanentCode is \"NOPERM\": redis://user:password@ must authenticate as user", err)
	}
	hidesPassword(t, "the error", err.Error(), v0)
	for call, run := range methodsWith(n, key(t), v) {
		if call == "Subscribe" { // ACL channel patterns, not key patterns, rule it
			continue
		}
		err := run(ctx)
		if code := driver.PermanentCode(err); code != "NOPERM" {
			t.Errorf("%s as the ACL user on a key outside its pattern: error = %v (driver.PermanentCode %q), want one for which driver.PermanentCode is \"NOPERM\": a Node must return the server's error reply, wrapped with %%w, never (false, nil) nor an error without it", call, err, code)
			continue
		}
		hidesPassword(t, call+"'s error", err.Error(), v)
	}
	if nn, ok := n.(driver.Notifier); ok {
		notify := make(chan struct{}, 1)
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		stop, err := nn.Subscribe(sctx, k, notify)
		cancel()
		if err != nil {
			t.Fatalf("Subscribe as the ACL user: %v: the pub/sub connection must authenticate too", err)
		}
		defer stop()
		v := value()
		must(t, "SetNX")(n.SetNX(ctx, k+"2", v, time.Minute))
		must(t, "ReleaseNotify")(nn.ReleaseNotify(ctx, k+"2", v))
	}
	wrongPassword, wrongUser := a, a
	wrongPassword.Password = "wrong-" + password
	wrongUser.Username = "nobody"
	for _, addr := range []Addr{wrongPassword, wrongUser} {
		bad := s.open(t, addr)
		v := value()
		ok, err := bad.SetNX(ctx, "acl:"+key(t), v, time.Minute)
		if err == nil {
			t.Fatalf("SetNX with a wrong user or password = %v, nil; want an error", ok)
		}
		hidesPassword(t, "the error", err.Error(), v)
	}
}

// tlsServer starts a server that requires TLS with client certificates, and
// returns it with its Certs's client configuration.
func tlsServer(t *testing.T, opts ...redistest.Option) (*redistest.Server, *tls.Config) {
	t.Helper()
	certs := redistest.NewCerts(t)
	srv := redistest.NewServer(t, append([]redistest.Option{redistest.WithTLS(certs, redistest.ClientCertsRequired)}, opts...)...)
	cfg, err := certs.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return srv, cfg
}

func tlsOpenConfig(t *testing.T, ctx context.Context, s *redisSuite) {
	co, ok := s.d.(driver.ConfigOpener)
	if !ok {
		t.Skipf("%T does not implement driver.ConfigOpener", s.d)
	}
	srv, cfg := tlsServer(t)
	openConfig := func(a Addr, dc driver.Config) driver.Node {
		t.Helper()
		addr := s.format(a)
		n, err := co.OpenConfig(addr, dc)
		if err != nil {
			t.Fatalf("OpenConfig(%q) = %v", addr, err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	// host:port with Config.TLS: TLS.
	n := openConfig(hostAddr(t, srv), driver.Config{TLS: cfg})
	if ok := must(t, "SetNX through OpenConfig(host:port, TLS)")(n.SetNX(ctx, key(t), value(), time.Minute)); !ok {
		t.Fatal("SetNX through OpenConfig(host:port, TLS) = false, want true")
	}
	// A rediss:// address's tls_* parameters apply on top of Config.TLS: here
	// its CA and client certificate, over a configuration that has neither.
	base := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	n = openConfig(fullAddr(t, srv), driver.Config{TLS: base})
	if ok := must(t, "SetNX through OpenConfig(rediss://...?tls_ca_file=..., TLS)")(n.SetNX(ctx, key(t), value(), time.Minute)); !ok {
		t.Fatal("SetNX through OpenConfig(rediss:// with tls_* parameters, TLS) = false, want true")
	}
	if len(base.Certificates) != 0 || base.ServerName != "" {
		t.Error("OpenConfig changed the Config's tls.Config: it must apply the address's parameters to a copy")
	}
	// Without Config.TLS, host:port is plain TCP, which a TLS server refuses.
	n = openConfig(hostAddr(t, srv), driver.Config{})
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if ok, err := n.SetNX(cctx, key(t), value(), time.Minute); err == nil {
		t.Fatalf("SetNX over plain TCP to a TLS server = %v, nil; want an error", ok)
	}
}

// tlsRefused checks that every call on n fails with an error that matches
// want (errors.As) or, failing that, contains text, and hides the password.
func tlsRefused(t *testing.T, ctx context.Context, n driver.Node, k string, want any, text string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v := value()
	errs := callsWith(cctx, n, k, v)
	if nn, ok := n.(driver.Notifier); ok {
		stop, err := nn.Subscribe(cctx, k, make(chan struct{}, 1))
		if err == nil {
			stop()
		}
		errs["Subscribe"] = err
	}
	for call, err := range errs {
		switch {
		case err == nil:
			t.Errorf("%s: error = nil, want the TLS error", call)
			continue
		case want != nil && !errors.As(err, want):
			t.Errorf("%s: error = %v, want one matching %T: a TLS failure must stay in the error chain", call, err, want)
		case !strings.Contains(err.Error(), text):
			t.Errorf("%s: error = %v, want one that says %q: the error must tell the user what TLS refused (with TLS 1.3 a server that wants a client certificate closes the connection after the handshake, which the client sees as a reset or end of file: say that the server asked for a certificate, which tls.Config.GetClientCertificate tells)", call, err, text)
		}
		hidesPassword(t, "the error", err.Error(), v)
	}
	if cctx.Err() != nil {
		t.Errorf("calls refused by TLS took their whole 5s deadline: a TLS failure must fail fast")
	}
}

func tlsUnknownCA(t *testing.T, ctx context.Context, s *redisSuite) {
	srv, _ := tlsServer(t, redistest.WithPassword(password))
	other := redistest.NewCerts(t) // another CA, which did not sign the server's certificate
	a := fullAddr(t, srv)
	a.CAFile = other.CAFile
	n := s.open(t, a)
	var unknown x509.UnknownAuthorityError
	tlsRefused(t, ctx, n, key(t), &unknown, "certificate signed by unknown authority")
}

func tlsClientCertRequired(t *testing.T, ctx context.Context, s *redisSuite) {
	srv, _ := tlsServer(t, redistest.WithPassword(password))
	a := fullAddr(t, srv)
	a.CertFile, a.KeyFile = "", ""
	n := s.open(t, a)
	tlsRefused(t, ctx, n, key(t), nil, "certificate")

	// With the client certificate: accepted.
	n = s.open(t, fullAddr(t, srv))
	if ok := must(t, "SetNX with a client certificate")(n.SetNX(ctx, key(t), value(), time.Minute)); !ok {
		t.Fatal("SetNX with a client certificate = false, want true")
	}
}

func tlsStalledDeadline(t *testing.T, ctx context.Context, s *redisSuite) {
	certs := redistest.NewCerts(t)
	stalledCallsEnd(t, ctx, s, false, redistest.WithTLS(certs, redistest.ClientCertsRequired))
}

func tlsStalledCancel(t *testing.T, ctx context.Context, s *redisSuite) {
	certs := redistest.NewCerts(t)
	stalledCallsEnd(t, ctx, s, true, redistest.WithTLS(certs, redistest.ClientCertsRequired))
}

// scriptsConcurrent runs every script from many goroutines at once, on a
// server that has no script loaded: first a fresh one, then after SCRIPT
// FLUSH.
func scriptsConcurrent(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	fencer, _ := n.(driver.Fencer)
	notifier, _ := n.(driver.Notifier)
	const goroutines = 32
	for round := range 2 {
		if round == 1 {
			if _, err := srv.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		errs := make(chan error, goroutines)
		start := make(chan struct{})
		for g := range goroutines {
			go func() {
				<-start
				errs <- scriptsOnce(ctx, n, fencer, notifier, fmt.Sprintf("%s-%d-%d", key(t), round, g))
			}()
		}
		close(start)
		for range goroutines {
			if err := <-errs; err != nil {
				t.Errorf("round %d (%s): %v", round, []string{"fresh server", "after SCRIPT FLUSH"}[round], err)
			}
		}
	}
}

// scriptsOnce runs every script on k, checking each result.
func scriptsOnce(ctx context.Context, n driver.Node, fencer driver.Fencer, notifier driver.Notifier, k string) error {
	v := value()
	check := func(call string, want bool) func(bool, error) error {
		return func(got bool, err error) error {
			if err != nil {
				return fmt.Errorf("%s: %w", call, err)
			}
			if got != want {
				return fmt.Errorf("%s = %v, want %v", call, got, want)
			}
			return nil
		}
	}
	steps := []func() error{
		func() error { return check("SetNX", true)(n.SetNX(ctx, k, v, time.Minute)) },
		func() error { return check("Extend by the holder", true)(n.Extend(ctx, k, v, time.Minute)) },
		func() error { return check("Extend by another", false)(n.Extend(ctx, k, "other", time.Minute)) },
		func() error { return check("EvalRelease by another", false)(n.EvalRelease(ctx, k, "other")) },
		func() error { return check("EvalRelease by the holder", true)(n.EvalRelease(ctx, k, v)) },
	}
	if notifier != nil {
		steps = append(steps,
			func() error { return check("SetNX", true)(n.SetNX(ctx, k, v, time.Minute)) },
			func() error { return check("ReleaseNotify by the holder", true)(notifier.ReleaseNotify(ctx, k, v)) },
		)
	}
	if fencer != nil {
		fk := k + ":fence"
		steps = append(steps,
			func() error {
				ok, counter, err := fencer.SetNXFence(ctx, k, v, time.Minute, fk)
				if err == nil && counter != 0 {
					err = fmt.Errorf("SetNXFence counter = %d, want 0", counter)
				}
				return check("SetNXFence", true)(ok, err)
			},
			func() error { return check("RaiseFence by the holder", true)(fencer.RaiseFence(ctx, k, v, fk, 7)) },
			func() error { return check("EvalRelease by the holder", true)(n.EvalRelease(ctx, k, v)) },
			func() error {
				ok, counter, err := fencer.SetNXFence(ctx, k, v, time.Minute, fk)
				if err == nil && counter != 7 {
					err = fmt.Errorf("SetNXFence counter = %d, want 7", counter)
				}
				return check("SetNXFence", true)(ok, err)
			},
		)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// releaseWithoutSPublish checks that a release succeeds where the
// publication of its notification fails, as on a server older than Redis
// 7.0 that has no SPUBLISH: here a user whose ACL refuses SPUBLISH.
func releaseWithoutSPublish(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	const user = "nopublish"
	userPassword := "np-" + password
	if _, err := srv.Do(ctx, "ACL", "SETUSER", user, "on", ">"+userPassword, "~*", "&*", "+@all", "-spublish"); err != nil {
		t.Fatal(err)
	}
	a := hostAddr(t, srv)
	a.Username, a.Password = user, userPassword
	n := s.open(t, a)
	nn := as[driver.Notifier](t, n)
	k, v := key(t), value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "ReleaseNotify without SPUBLISH")(nn.ReleaseNotify(ctx, k, v)); !ok {
		t.Fatal("ReleaseNotify = false, want true: the key was deleted; only its announcement failed")
	}
	if ok := must(t, "SetNX after the release")(n.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX after ReleaseNotify = false, want true: the release must have deleted the key")
	}
}

// fenceReadsOldCounters checks, with the counter of a Client with a key
// prefix (driver.PrefixFenceKey), that SetNXFence reads the old counters
// (driver.OldFenceKeys: the one every prefix shared, and the per-key one)
// and takes the largest; that RaiseFence writes only the prefix's counter;
// that an old counter which does not hold a number (a lock of that name)
// counts as none, not as an error; and that an ACL user who may not read
// the old counters still takes fenced locks, the old counters counting as
// none, while one who may read them (%R~) reads them.
func fenceReadsOldCounters(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	const prefix = "p:"
	set := func(name, v string) { serverDo(t, ctx, srv, "SET", name, v) }
	get := func(name string) string { return fmt.Sprint(serverDo(t, ctx, srv, "GET", name)) }
	a := hostAddr(t, srv)
	a.Password = password
	f := as[driver.Fencer](t, s.open(t, a))
	k := prefix + key(t)
	fk := driver.PrefixFenceKey(prefix, k)
	if fk != prefix+driver.FenceKey(k) {
		t.Fatalf("PrefixFenceKey(%q, %q) = %q, want the prefix before FenceKey", prefix, k, fk)
	}
	set(driver.FenceKey(k), "50")
	set(driver.LegacyFenceKey(k), "41")
	v := value()
	ok, counter, err := f.SetNXFence(ctx, k, v, time.Minute, fk)
	if err != nil || !ok || counter != 50 {
		t.Fatalf("SetNXFence with the prefix's counter absent, the shared one at 50 and the per-key one at 41 = %v, %d, %v; want true, 50: tokens must keep rising from the counters of earlier versions", ok, counter, err)
	}
	if ok := must(t, "RaiseFence")(f.RaiseFence(ctx, k, v, fk, 51)); !ok {
		t.Fatal("RaiseFence of the holder = false, want true")
	}
	if got, shared := get(fk), get(driver.FenceKey(k)); got != "51" || shared != "50" {
		t.Fatalf("after RaiseFence(51) the prefix's counter holds %q and the shared one %q; want 51 and 50: only the counter given is written", got, shared)
	}
	// An old counter that holds a lock's value is none.
	k2 := prefix + key(t)
	fk2 := driver.PrefixFenceKey(prefix, k2)
	set(driver.FenceKey(k2), "a lock's value")
	set(driver.LegacyFenceKey(k2), "7")
	if ok, counter, err = f.SetNXFence(ctx, k2, value(), time.Minute, fk2); err != nil || !ok || counter != 7 {
		t.Fatalf("SetNXFence with a shared counter that is not a number and a per-key one at 7 = %v, %d, %v; want true, 7", ok, counter, err)
	}
	// Users who may use only the prefix's keys: one without, one with
	// the right to read the old counters.
	for _, tc := range []struct {
		user string
		read []string // ACL rules of the old counters
		want uint64
	}{
		{"narrow", nil, 0},
		{"reader", []string{"%R~redlock:fence:*", "%R~{" + prefix + "*"}, 60},
	} {
		rule := append([]string{"ACL", "SETUSER", tc.user, "on", ">acl-" + password, "~" + prefix + "*", "+@all"}, tc.read...)
		serverDo(t, ctx, srv, rule...)
		ua := hostAddr(t, srv)
		ua.Username, ua.Password = tc.user, "acl-"+password
		uf := as[driver.Fencer](t, s.open(t, ua))
		k3 := prefix + key(t)
		set(driver.FenceKey(k3), "60")
		ok, counter, err := uf.SetNXFence(ctx, k3, value(), time.Minute, driver.PrefixFenceKey(prefix, k3))
		if err != nil || !ok || counter != tc.want {
			t.Errorf("SetNXFence as user %s (%q) with the shared counter at 60 = %v, %d, %v; want true, %d", tc.user, rule[4:], ok, counter, err, tc.want)
		}
	}
}

// fenceCounterNotNumber checks that a counter in use that holds no decimal
// number of 64 bits (written by hand, or a lock named as the counter) fails
// SetNXFence and RaiseFence with an error that retrying cannot fix
// (driver.PermanentCode), before they write anything: the key is not set
// and the counter keeps what it holds. Read as a transient failure, it made
// every fenced Lock of the slot retry until its context ended.
func fenceCounterNotNumber(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	f := as[driver.Fencer](t, s.open(t, hostAddr(t, srv)))
	const code = "ERR fencing counter holds no number"
	for _, held := range []string{"a lock's value", "-1", "1.5", "", " 7", "18446744073709551616"} {
		k := key(t)
		fk := driver.FenceKey(k)
		serverDo(t, ctx, srv, "SET", fk, held)
		_, _, err := f.SetNXFence(ctx, k, value(), time.Minute, fk)
		if got := driver.PermanentCode(err); got != code {
			t.Errorf("SetNXFence with the counter holding %q: error %v, PermanentCode %q; want %q", held, err, got, code)
		}
		if got := serverDo(t, ctx, srv, "EXISTS", k); got != int64(0) {
			t.Errorf("SetNXFence with the counter holding %q set the key (EXISTS = %v): it must write nothing", held, got)
		}
		v := value()
		serverDo(t, ctx, srv, "SET", k, v)
		_, err = f.RaiseFence(ctx, k, v, fk, 9)
		if got := driver.PermanentCode(err); got != code {
			t.Errorf("RaiseFence with the counter holding %q: error %v, PermanentCode %q; want %q", held, err, got, code)
		}
		if got := serverDo(t, ctx, srv, "GET", fk); got != held {
			t.Errorf("RaiseFence changed a counter holding %q to %v: it must write nothing", held, got)
		}
	}
}

// fenceReadsLegacyCounter checks that SetNXFence reads the per-key counter
// of earlier versions (driver.LegacyFenceKey) beside the current one, so
// that tokens keep rising across an upgrade.
func fenceReadsLegacyCounter(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	f := as[driver.Fencer](t, s.open(t, hostAddr(t, srv)))
	k := key(t)
	// What an earlier version left: a per-key counter at 41.
	if _, err := srv.Do(ctx, "SET", driver.LegacyFenceKey(k), "41"); err != nil {
		t.Fatal(err)
	}
	set, counter, err := f.SetNXFence(ctx, k, value(), time.Minute, driver.FenceKey(k))
	if err != nil || !set || counter < 41 {
		t.Fatalf("SetNXFence with a legacy counter at 41 = %v, %d, %v; want true, at least 41: tokens must keep rising across the upgrade", set, counter, err)
	}
	// A key with "}" and no "{": its legacy counter is in another slot,
	// which a single server reads all the same.
	k = key(t) + "}"
	if _, err := srv.Do(ctx, "SET", driver.LegacyFenceKey(k), "77"); err != nil {
		t.Fatal(err)
	}
	if set, counter, err = f.SetNXFence(ctx, k, value(), time.Minute, driver.FenceKey(k)); err != nil || !set || counter < 77 {
		t.Fatalf("SetNXFence(key with \"}\") with a legacy counter at 77 = %v, %d, %v; want true, at least 77", set, counter, err)
	}
}
