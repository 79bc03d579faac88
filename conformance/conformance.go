// Package conformance checks that a driver.Node keeps the contract in the
// driver package's documentation, in the way testing/fstest checks a file
// system. A driver calls it from a test function of its own.
//
// A Redis driver calls [RunRedis] with its Driver: the suite starts the
// redis-server processes it needs (one per node, on loopback ports) and runs
// [Run] over nodes the driver opens on them, then the checks that only a Redis
// driver's Open can pass (passwords, ACL users, databases, TLS, down and
// stalled servers). The addresses are those of this module's drivers; a driver
// that writes them its own way passes [WithAddress]. Any other Node calls Run
// with a function that returns a fresh node, independent of the others: the
// Redlock subtest makes a redlock.Client of three nodes, which refuses two
// nodes on one server. The package's example (example_test.go) shows both.
//
// # Running the suite
//
// RunRedis starts its servers with package redistest, which skips a test
// when redis-server is not installed, unless the CI environment variable is
// set (to anything but "false" or "0"), when it fails the test. Without
// redis-server, then, every subtest of RunRedis is skipped and go test reports
// ok: a driver's author must see that the subtests ran. Run with -v (a
// skipped subtest says SKIP), and set CI=1 where a missing redis-server must
// be a failure. -short skips them too.
//
// Run the suite with -race. A Node must be safe for concurrent use, and the
// suite calls it from many goroutines at once, but a data race (a map or a
// counter shared without a lock) fails a test only under the race detector.
package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// subtestTimeout bounds each subtest.
const subtestTimeout = 20 * time.Second

// Run runs the conformance subtests, each with fresh nodes from newNode. The
// subtests of the optional interfaces (driver.Fencer, driver.Notifier,
// driver.TTLer) run
// when the nodes implement them and are skipped otherwise. The
// nodes newNode returns must be independent (on distinct servers), as the
// nodes of a redlock.Client must: the Redlock subtest gives three of them to
// redlock.New. Every subtest uses keys of its own. Some subtests close their
// node; newNode's cleanup must tolerate a node that is already closed.
func Run(t *testing.T, newNode func(t *testing.T) driver.Node) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, newNode func(t *testing.T) driver.Node)
	}{
		{"SetNX/SetsAbsentKey", setNXSetsAbsentKey},
		{"SetNX/RefusesHeldKey", setNXRefusesHeldKey},
		{"SetNX/Expires", setNXExpires},
		{"SetNX/SubMillisecondTTL", setNXSubMillisecondTTL},
		{"SetNX/OneWinner", setNXOneWinner},
		{"SetNX/AnyKeyAndValue", setNXAnyKeyAndValue},
		{"SetNX/BinaryKeysAndValues", setNXBinary},
		{"EvalRelease/DeletesOwnKey", releaseDeletesOwnKey},
		{"EvalRelease/KeepsOthersKey", releaseKeepsOthersKey},
		{"EvalRelease/AbsentKey", releaseAbsentKey},
		{"Extend/ExtendsOwnKey", extendExtendsOwnKey},
		{"Extend/Shortens", extendShortens},
		{"Extend/KeepsOthersKey", extendKeepsOthersKey},
		{"Extend/AbsentKey", extendAbsentKey},
		{"Context/Canceled", contextCanceled},
		{"Context/DeadlineExceeded", contextDeadlineExceeded},
		{"Close/CallsFail", closeCallsFail},
		{"Redlock/ThreeNodes", redlockThreeNodes},
		{"Fencer/Counts", fenceCounts},
		{"Fencer/CounterOutlivesKey", fenceOutlivesKey},
		{"Fencer/CounterAtFenceKey", fenceCounterAtFenceKey},
		{"Fencer/Expires", fenceExpires},
		{"Notifier/NotifiesRelease", notifyOnRelease},
		{"Notifier/StopsOnCancel", notifyStopsOnCancel},
		{"Notifier/NeverBlocks", notifyNeverBlocks},
		{"Notifier/TwoSubscriptions", notifyTwoSubscriptions},
		{"Identifier/Stable", identityStable},
		{"Identifier/Context", identityContext},
		{"TTLer/OwnKey", ttlOwnKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), subtestTimeout)
			defer cancel()
			tc.fn(t, ctx, newNode)
		})
	}
}

// key returns a key that no other subtest or run uses.
func key(t *testing.T) string {
	return "conformance:" + t.Name() + ":" + rand.Text()
}

func value() string { return rand.Text() }

// must returns a function that fails the test if a call's error is not nil,
// naming the call, and otherwise returns the call's result.
func must(t *testing.T, call string) func(bool, error) bool {
	return func(ok bool, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: unexpected error %v", call, err)
		}
		return ok
	}
}

func setNXSetsAbsentKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	if ok := must(t, "SetNX(absent key)")(n.SetNX(ctx, k, v, time.Minute)); !ok {
		t.Fatal("SetNX(absent key) = false, want true: a Node must set a key that does not exist")
	}
}

func setNXRefusesHeldKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	must(t, "SetNX(absent key)")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "SetNX(otherValue)")(n.SetNX(ctx, k, value(), time.Minute)); ok {
		t.Fatal("SetNX(otherValue) = true, want false: a Node must not set a key held by another value (NX)")
	}
	if ok := must(t, "SetNX(sameValue)")(n.SetNX(ctx, k, v, time.Minute)); ok {
		t.Fatal("SetNX(sameValue) on a held key = true, want false: SET NX fails on any existing key")
	}
	// A refused SetNX with a TTL of 1ms: had it given the key its TTL
	// (a PEXPIRE sent whatever SET NX answered), the key would be gone by
	// the EvalRelease below, and a second holder could take it while the
	// first believes it holds the lock.
	if ok := must(t, "SetNX(otherValue, 1ms)")(n.SetNX(ctx, k, value(), time.Millisecond)); ok {
		t.Fatal("SetNX(otherValue, 1ms) = true, want false: a Node must not set a key held by another value (NX)")
	}
	time.Sleep(20 * time.Millisecond)
	if ok := must(t, "EvalRelease(value)")(n.EvalRelease(ctx, k, v)); !ok {
		t.Fatal("EvalRelease(value) after refused SetNX calls, the last with a TTL of 1ms, 20ms before = false, want true: a refused SetNX must not change the key, nor its time to live")
	}
}

// waitFree polls SetNX with a fresh value until it succeeds and returns when.
func waitFree(t *testing.T, ctx context.Context, n driver.Node, k string, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if must(t, "SetNX(otherValue)")(n.SetNX(ctx, k, value(), time.Minute)) {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}
}

func setNXExpires(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	const ttl = 300 * time.Millisecond
	n, k := newNode(t), key(t)
	start := time.Now()
	must(t, "SetNX(absent key)")(n.SetNX(ctx, k, value(), ttl))
	expiredInTime(t, fmt.Sprintf("SetNX(ttl=%v)", ttl), ttl, start, waitFree(t, ctx, n, k, 5*time.Second),
		"a Node must set the TTL with the key (SET NX PX)", "a Node must not expire a key before its TTL")
}

// expiredInTime fails the test unless a key given ttl by call at start was
// freed (at freed, zero if never within waitFree's limit), and not before
// its TTL. never and early say what the Node did wrong in either case.
func expiredInTime(t *testing.T, call string, ttl time.Duration, start, freed time.Time, never, early string) {
	t.Helper()
	switch {
	case freed.IsZero():
		t.Fatalf("%s: the key was still held 5s later: %s", call, never)
	case freed.Sub(start) < ttl-5*time.Millisecond:
		t.Fatalf("%s: the key was free after %v: %s", call, freed.Sub(start), early)
	}
}

func setNXSubMillisecondTTL(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	const rule = "a TTL below 1ms must be rounded up to 1ms, not sent as PX 0"
	n, k := newNode(t), key(t)
	// A SET of a whole TTL first, so that an error of the node's own (a
	// connection refused) is not blamed on the rule below.
	must(t, "SetNX(ttl=1m)")(n.SetNX(ctx, key(t), value(), time.Minute))
	ok, err := n.SetNX(ctx, k, value(), 500*time.Microsecond)
	switch {
	case err != nil: // Redis answers SET NX PX 0 with "invalid expire time"
		t.Fatalf("SetNX(ttl=500µs) error = %v, want none (SetNX(ttl=1m) succeeded): %s", err, rule)
	case !ok:
		t.Fatalf("SetNX(ttl=500µs) = false, want true: %s", rule)
	}
}

func setNXOneWinner(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	const contenders = 16
	n, k := newNode(t), key(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
		errs []error
	)
	for range contenders {
		wg.Go(func() {
			ok, err := n.SetNX(ctx, k, value(), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				wins++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("SetNX from %d goroutines at once: errors %v", contenders, errors.Join(errs...))
	}
	if wins != 1 {
		t.Fatalf("SetNX from %d goroutines at once on one key: %d returned true, want exactly 1", contenders, wins)
	}
}

func setNXAnyKeyAndValue(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n := newNode(t)
	for _, suffix := range []string{" with spaces", ":ünïcödé:锁", "{braces}", "\r\nCRLF\r\n", "\x00NUL", "\xff\xfe", strings.Repeat("x", 2000)} {
		k := key(t) + suffix
		v := value() + suffix
		if ok := must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute)); !ok {
			t.Fatalf("SetNX(%.40q) = false, want true: a Node must accept any key", k)
		}
		if ok := must(t, "EvalRelease")(n.EvalRelease(ctx, k, v)); !ok {
			t.Fatalf("EvalRelease(%.40q, same value) = false, want true: keys and values must round-trip unchanged", k)
		}
	}
}

// setNXBinary checks that keys and values are bytes, not text: keys that
// differ only after a NUL byte, or only in bytes that are not valid UTF-8,
// are distinct locks, and a value that differs from the holder's only there
// is another value. A Node that cut strings at a NUL or replaced invalid
// UTF-8 would make two locks one, or let another release a lock.
func setNXBinary(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n := newNode(t)
	for _, pair := range [][2]string{{"\x00a", "\x00b"}, {"\xff\xfe", "\xfe\xff"}} {
		k, v := key(t), value()
		k1, k2, v1, v2 := k+pair[0], k+pair[1], v+pair[0], v+pair[1]
		if ok := must(t, "SetNX")(n.SetNX(ctx, k1, v1, time.Minute)); !ok {
			t.Fatalf("SetNX(%q) = false, want true: a Node must accept any key", k1)
		}
		if ok := must(t, "SetNX")(n.SetNX(ctx, k2, v2, time.Minute)); !ok {
			t.Fatalf("SetNX(%q) while %q is held = false, want true: keys that differ only after a NUL byte or in bytes that are not UTF-8 are distinct locks; a Node must send keys as bytes", k2, k1)
		}
		if ok := must(t, "EvalRelease")(n.EvalRelease(ctx, k1, value())); ok {
			t.Fatalf("EvalRelease(%q, otherValue) of a key held by %q = true, want false: a Node must not release a key held by another value", k1, v1)
		}
		if ok := must(t, "EvalRelease")(n.EvalRelease(ctx, k1, v2)); ok {
			t.Fatalf("EvalRelease(%q, %q) of a key held by %q = true, want false: values that differ only after a NUL byte or in bytes that are not UTF-8 are distinct; a Node must send values as bytes", k1, v2, v1)
		}
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
			if ok := must(t, "EvalRelease")(n.EvalRelease(ctx, kv[0], kv[1])); !ok {
				t.Fatalf("EvalRelease(%q, same value) = false, want true: keys and values must round-trip unchanged", kv[0])
			}
		}
	}
}

func releaseDeletesOwnKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "EvalRelease(value)")(n.EvalRelease(ctx, k, v)); !ok {
		t.Fatal("EvalRelease(value) = false, want true: a Node must delete a key that holds the value")
	}
	if ok := must(t, "SetNX after EvalRelease")(n.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX after EvalRelease(value) = false, want true: EvalRelease must delete the key")
	}
}

func releaseKeepsOthersKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "EvalRelease(otherValue)")(n.EvalRelease(ctx, k, value())); ok {
		t.Fatal("EvalRelease(otherValue) = true, want false: a Node must not release a key held by another value")
	}
	if ok := must(t, "SetNX after EvalRelease(otherValue)")(n.SetNX(ctx, k, value(), time.Minute)); ok {
		t.Fatal("SetNX after EvalRelease(otherValue) = true, want false: a Node must not delete a key held by another value")
	}
}

func releaseAbsentKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k := newNode(t), key(t)
	if ok := must(t, "EvalRelease(absent key)")(n.EvalRelease(ctx, k, value())); ok {
		t.Fatal("EvalRelease(absent key) = true, want false: there was nothing to release")
	}
}

func extendExtendsOwnKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n := newNode(t)
	var (
		k, v  string
		start time.Time
		ttl   time.Duration
	)
	// The Extend must come within the SET's TTL: on a machine slow enough
	// to let the whole TTL pass first (the key may then have expired; before
	// that it cannot have: the server set it after start), again with a TTL
	// four times longer.
	for ttl = 200 * time.Millisecond; ; ttl *= 4 {
		k, v = key(t), value()
		start = time.Now()
		must(t, "SetNX")(n.SetNX(ctx, k, v, ttl))
		if must(t, "Extend(value, 1m)")(n.Extend(ctx, k, v, time.Minute)) {
			break
		}
		if time.Since(start) < ttl || ttl > 3*time.Second {
			t.Fatalf("Extend(value) %v after SetNX(ttl %v) = false, want true: a Node must extend a key that holds the value", time.Since(start), ttl)
		}
	}
	time.Sleep(ttl - time.Since(start) + 100*time.Millisecond)
	if ok := must(t, "SetNX(otherValue) after the first TTL")(n.SetNX(ctx, k, value(), time.Minute)); ok {
		t.Fatal("SetNX(otherValue) after the original TTL of an extended key = true, want false: Extend must set the new TTL")
	}
	if ok := must(t, "EvalRelease(value) after Extend")(n.EvalRelease(ctx, k, v)); !ok {
		t.Fatal("EvalRelease(value) after Extend = false, want true: Extend must keep the value")
	}
}

// extendShortens extends a key with an hour to live to ttl: the key must be
// free within seconds, and not before ttl (a Node that kept a key for less
// than it was asked would let a second holder in while the first believes
// it holds the lock).
func extendShortens(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	const ttl = 300 * time.Millisecond
	n, k, v := newNode(t), key(t), value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Hour))
	start := time.Now()
	if ok := must(t, "Extend(value, 300ms)")(n.Extend(ctx, k, v, ttl)); !ok {
		t.Fatal("Extend(value, 300ms) = false, want true")
	}
	expiredInTime(t, fmt.Sprintf("Extend(value, %v) on a key with 1h to live", ttl), ttl, start, waitFree(t, ctx, n, k, 5*time.Second),
		"Extend must set the TTL, also to a shorter one", "a Node must keep an extended key for its whole TTL (PEXPIRE, in milliseconds)")
}

func extendKeepsOthersKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "Extend(otherValue)")(n.Extend(ctx, k, value(), time.Minute)); ok {
		t.Fatal("Extend(otherValue) = true, want false: a Node must not extend a key held by another value")
	}
	// Again with a TTL of 1ms: had Extend given another's key its TTL (a
	// PEXPIRE sent whatever the key holds), the key would be gone by the
	// EvalRelease below: a late Extend of a former holder would cut the
	// lock of the one holding it now.
	if ok := must(t, "Extend(otherValue, 1ms)")(n.Extend(ctx, k, value(), time.Millisecond)); ok {
		t.Fatal("Extend(otherValue, 1ms) = true, want false: a Node must not extend a key held by another value")
	}
	time.Sleep(20 * time.Millisecond)
	if ok := must(t, "EvalRelease(value)")(n.EvalRelease(ctx, k, v)); !ok {
		t.Fatal("EvalRelease(value) after Extend(otherValue) and, 20ms before, Extend(otherValue, 1ms) = false, want true: Extend(otherValue, 1ms) must not change the key, nor its time to live")
	}
}

func extendAbsentKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k, v := newNode(t), key(t), value()
	if ok := must(t, "Extend(absent key)")(n.Extend(ctx, k, v, time.Minute)); ok {
		t.Fatal("Extend(absent key) = true, want false: there was nothing to extend")
	}
	if ok := must(t, "SetNX after Extend(absent key)")(n.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX after Extend(absent key) = false, want true: Extend must not create a key")
	}
}

// methods returns a call of every Node method on key k, by name, and of the
// optional interfaces' methods when n implements them.
func methods(n driver.Node, k string) map[string]func(context.Context) error {
	return methodsWith(n, k, value())
}

// methodsWith is methods whose calls pass the lock value v.
func methodsWith(n driver.Node, k, v string) map[string]func(context.Context) error {
	m := map[string]func(context.Context) error{
		"SetNX": func(ctx context.Context) error {
			_, err := n.SetNX(ctx, k, v, time.Minute)
			return err
		},
		"EvalRelease": func(ctx context.Context) error {
			_, err := n.EvalRelease(ctx, k, v)
			return err
		},
		"Extend": func(ctx context.Context) error {
			_, err := n.Extend(ctx, k, v, time.Minute)
			return err
		},
	}
	if f, ok := n.(driver.Fencer); ok {
		m["SetNXFence"] = func(ctx context.Context) error {
			_, _, err := f.SetNXFence(ctx, k, v, time.Minute, driver.FenceKey(k))
			return err
		}
		m["RaiseFence"] = func(ctx context.Context) error {
			_, err := f.RaiseFence(ctx, k, v, driver.FenceKey(k), 1)
			return err
		}
	}
	if tt, ok := n.(driver.TTLer); ok {
		m["TTL"] = func(ctx context.Context) error {
			_, _, err := tt.TTL(ctx, k, v)
			return err
		}
	}
	if nn, ok := n.(driver.Notifier); ok {
		m["ReleaseNotify"] = func(ctx context.Context) error {
			_, err := nn.ReleaseNotify(ctx, k, v)
			return err
		}
		m["Subscribe"] = func(ctx context.Context) error {
			cancel, err := nn.Subscribe(ctx, k, make(chan struct{}, 1))
			if cancel != nil {
				cancel()
			}
			return err
		}
	}
	return m
}

// Calls runs every method of n once on key (SetNX, EvalRelease, Extend, and
// those of driver.Fencer, driver.Notifier and driver.TTLer when n implements
// them) and
// returns their errors by method name: for a driver's own tests of a node
// that is closed, down or given a done context, where every call must fail.
func Calls(ctx context.Context, n driver.Node, key string) map[string]error {
	return callsWith(ctx, n, key, value())
}

// callsWith is Calls with the lock value v.
func callsWith(ctx context.Context, n driver.Node, k, v string) map[string]error {
	errs := make(map[string]error)
	for name, call := range methodsWith(n, k, v) {
		errs[name] = call(ctx)
	}
	return errs
}

// nilFailure adds to a Context subtest's message, when the call returned no
// error, the other way a Node comes to that: turning its failures (here the
// context's) into a plain false.
func nilFailure(err error) string {
	if err != nil {
		return ""
	}
	return ", and a call that failed must return its error, never (false, nil)"
}

func contextCanceled(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k := newNode(t), key(t)
	must(t, "SetNX")(n.SetNX(ctx, k, value(), time.Minute)) // connect first
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for call, err := range Calls(cctx, n, k) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s(canceled ctx) error = %v, want one matching context.Canceled: a Node must honour its context%s", call, err, nilFailure(err))
		}
	}
}

func contextDeadlineExceeded(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k := newNode(t), key(t)
	must(t, "SetNX")(n.SetNX(ctx, k, value(), time.Minute))
	dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	for call, err := range Calls(dctx, n, k) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s(expired ctx) error = %v, want one matching context.DeadlineExceeded: a Node must honour its context%s", call, err, nilFailure(err))
		}
	}
}

func closeCallsFail(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, k := newNode(t), key(t)
	must(t, "SetNX")(n.SetNX(ctx, k, value(), time.Minute))
	if err := n.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	for call, run := range methods(n, k) {
		if err := run(ctx); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("%s after Close: error = %v, want one matching driver.ErrClosed: a closed Node must not answer, and must say why", call, err)
		}
	}
	// redlock.Client.Close closes its nodes, and a user may close a node
	// of their own too: a Close that is not the first does nothing more.
	if err := n.Close(); err != nil {
		t.Errorf("Close() again = %v, want nil: Close may be called more than once, and a Close that is not the first does nothing more and returns nil", err)
	}
}

func redlockThreeNodes(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	nodes := []driver.Node{newNode(t), newNode(t), newNode(t)}
	c, err := redlock.New(nodes, redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("redlock.New(3 nodes) = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	// The nodes' first connections (a cluster client's slot map among
	// them) within the subtest's context, not the node timeout: a loaded
	// machine took more than 2 s to connect two cluster nodes of rueidis
	// (clean-clone CI: "SET NX: slot 2835: connect: still connecting").
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect(3 nodes) = %v", err)
	}
	k := key(t)
	l, err := c.TryLock(ctx, k)
	if err != nil {
		t.Fatalf("TryLock(free key) = %v, want a lock", err)
	}
	if _, err := c.TryLock(ctx, k); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock(held key) error = %v, want ErrNotObtained: a held lock must exclude others", err)
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Lock.Extend = %v, want nil", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Lock.Unlock = %v, want nil", err)
	}
	if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Lock.Extend after Unlock = %v, want ErrLockLost", err)
	}
	l2, err := c.Lock(ctx, k)
	if err != nil {
		t.Fatalf("Lock(released key) = %v, want a lock", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("second Lock.Unlock = %v, want nil", err)
	}
}
