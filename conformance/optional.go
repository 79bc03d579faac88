package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Subtests of the optional interfaces, skipped for nodes that lack them.

func fencer(t *testing.T, newNode func(*testing.T) driver.Node) (driver.Node, driver.Fencer) {
	t.Helper()
	n := newNode(t)
	return n, as[driver.Fencer](t, n)
}

// as returns n as the optional interface T, or skips the test when n does
// not implement it.
func as[T any](t *testing.T, n driver.Node) T {
	t.Helper()
	x, ok := n.(T)
	if !ok {
		t.Skipf("%T does not implement %v", n, reflect.TypeFor[T]())
	}
	return x
}

// setNXFence calls SetNXFence and fails the test on an error.
func setNXFence(t *testing.T, ctx context.Context, f driver.Fencer, k, v, fk string, ttl time.Duration) (bool, uint64) {
	t.Helper()
	ok, counter, err := f.SetNXFence(ctx, k, v, ttl, fk)
	if err != nil {
		t.Fatalf("SetNXFence: unexpected error %v", err)
	}
	return ok, counter
}

func fenceCounts(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, f := fencer(t, newNode)
	k, v := key(t), value()
	fk := "{" + k + "}:counter" // a counter of its own, in the key's slot
	if ok, c := setNXFence(t, ctx, f, k, v, fk, time.Minute); !ok || c != 0 {
		t.Fatalf("SetNXFence(absent key, no counter) = %v, %d; want true, 0", ok, c)
	}
	if ok := must(t, "RaiseFence(value, 5)")(f.RaiseFence(ctx, k, v, fk, 5)); !ok {
		t.Fatal("RaiseFence(value, 5) = false, want true: the key holds the value")
	}
	if ok, c := setNXFence(t, ctx, f, k, value(), fk, time.Minute); ok || c != 5 {
		t.Fatalf("SetNXFence(held key) = %v, %d; want false, 5: the counter is read whether or not the key is set", ok, c)
	}
	if ok := must(t, "RaiseFence(value, 3)")(f.RaiseFence(ctx, k, v, fk, 3)); !ok {
		t.Fatal("RaiseFence(value, 3) = false, want true")
	}
	if ok := must(t, "RaiseFence(otherValue, 9)")(f.RaiseFence(ctx, k, value(), fk, 9)); ok {
		t.Fatal("RaiseFence(otherValue) = true, want false: only the holder may write its token")
	}
	must(t, "EvalRelease")(n.EvalRelease(ctx, k, v))
	// A holder whose key was released (or expired) holds nothing: its late
	// raise would lift the counter past the tokens of a holder that came
	// after it.
	if ok := must(t, "RaiseFence(value, 9) after EvalRelease(value)")(f.RaiseFence(ctx, k, v, fk, 9)); ok {
		t.Fatal("RaiseFence(value, 9) after EvalRelease(value) = true, want false: only the holder may write its token, and a key that nothing holds has no holder")
	}
	if ok, c := setNXFence(t, ctx, f, k, value(), fk, time.Minute); !ok || c != 5 {
		t.Fatalf("SetNXFence after RaiseFence 5, 3 and two refused 9 = %v, %d; want true, 5: a counter never goes down, and only the holder raises it", ok, c)
	}
}

// fenceCounterAtFenceKey checks that the counter is the one at the fenceKey
// given, whichever lock key reads or raises it: package redlock passes
// driver.PrefixFenceKey(prefix, key) (driver.FenceKey(key) without a key
// prefix), one counter per hash slot and prefix shared by every key of the
// slot and prefix and by every driver, and the tokens of a key rise across
// clients and drivers only if each driver reads and writes that counter. A
// Node that kept a counter of its own per lock key, whatever the fenceKey,
// passes Fencer/Counts (it reads back what it wrote) and hands out tokens
// below those of the other drivers on the same servers. The keys share a
// hash tag, so that they are in one slot on a Redis Cluster.
func fenceCounterAtFenceKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	_, f := fencer(t, newNode)
	tag := key(t)
	k1, k2, k3 := "{"+tag+"}:a", "{"+tag+"}:b", "{"+tag+"}:c"
	fk, other := "{"+tag+"}:counter", "{"+tag+"}:other-counter"
	v1 := value()
	if ok, c := setNXFence(t, ctx, f, k1, v1, fk, time.Minute); !ok || c != 0 {
		t.Fatalf("SetNXFence(absent key, no counter) = %v, %d; want true, 0", ok, c)
	}
	if ok := must(t, "RaiseFence(value, 7)")(f.RaiseFence(ctx, k1, v1, fk, 7)); !ok {
		t.Fatal("RaiseFence(value, 7) = false, want true: the key holds the value")
	}
	if ok, c := setNXFence(t, ctx, f, k2, value(), fk, time.Minute); !ok || c != 7 {
		t.Fatalf("SetNXFence(another key, the same fenceKey) after RaiseFence(key, 7) = %v, %d; want true, 7: a Node must keep the counter at the fenceKey it is given, which every key passing it shares (package redlock passes driver.PrefixFenceKey(prefix, key), one counter per hash slot and key prefix, shared with the other drivers)", ok, c)
	}
	if ok, c := setNXFence(t, ctx, f, k3, value(), other, time.Minute); !ok || c != 0 {
		t.Fatalf("SetNXFence(another key, a fenceKey never raised) = %v, %d; want true, 0: a Node must keep the counter at the fenceKey it is given, and read no other", ok, c)
	}
}

// fenceExpires sets a key with SetNXFence: it must be free within seconds,
// and not before its TTL, as with SetNX.
func fenceExpires(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	const ttl = 300 * time.Millisecond
	n, f := fencer(t, newNode)
	k := key(t)
	start := time.Now()
	if ok, _ := setNXFence(t, ctx, f, k, value(), "{"+k+"}:counter", ttl); !ok {
		t.Fatal("SetNXFence(absent key) = false, want true")
	}
	expiredInTime(t, fmt.Sprintf("SetNXFence(ttl=%v)", ttl), ttl, start, waitFree(t, ctx, n, k, 5*time.Second),
		"a Node must set the TTL with the key", "a Node must not expire a key before its TTL")
}

func fenceOutlivesKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	_, f := fencer(t, newNode)
	k, v := key(t), value()
	fk := "{" + k + "}:counter" // a counter of its own, in the key's slot
	// Beyond a Lua number's exact integers and beyond an int64: a counter
	// is a uint64, up to 2^64-1.
	const big = uint64(1)<<63 + 7
	// The RaiseFence must come within the SET's TTL: on a machine slow
	// enough to let the whole TTL pass first, again with a TTL four times
	// longer (the key, in the counter's slot, had expired): 100ms, 400ms,
	// 1.6s, then 6.4s.
	ttl := 100 * time.Millisecond
	for ; ; ttl *= 4 {
		start := time.Now()
		setNXFence(t, ctx, f, k, v, fk, ttl)
		if must(t, "RaiseFence")(f.RaiseFence(ctx, k, v, fk, big)) {
			break
		}
		if time.Since(start) < ttl || ttl > 2*time.Second {
			t.Fatalf("RaiseFence(value) %v after SetNXFence(ttl %v) = false, want true: a Node must raise the counter of a key that holds the value", time.Since(start), ttl)
		}
		v = value()
	}
	// The key expires within its TTL (the last one tried), plus 5s.
	deadline := time.Now().Add(ttl + 5*time.Second)
	for time.Now().Before(deadline) {
		ok, c := setNXFence(t, ctx, f, k, value(), fk, time.Minute)
		if ok {
			if c != big {
				t.Fatalf("SetNXFence after the key expired: counter %d, want %d: counters never expire and keep every digit (a uint64, not an int64 nor a Lua number)", c, big)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("SetNXFence(ttl=%v): the key was still held 5s after its TTL", ttl)
}

func notifier(t *testing.T, newNode func(*testing.T) driver.Node) (driver.Node, driver.Notifier) {
	t.Helper()
	n := newNode(t)
	return n, as[driver.Notifier](t, n)
}

// quiet fails the test if notify receives within a short while.
func quiet(t *testing.T, notify <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-notify:
		t.Fatal(why)
	case <-time.After(100 * time.Millisecond):
	}
}

func notifyOnRelease(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, nn := notifier(t, newNode)
	k, v := key(t), value()
	notify := make(chan struct{}, 1)
	cancel, err := nn.Subscribe(ctx, k, notify)
	if err != nil {
		t.Fatalf("Subscribe: unexpected error %v", err)
	}
	defer cancel()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "ReleaseNotify(otherValue)")(nn.ReleaseNotify(ctx, k, value())); ok {
		t.Fatal("ReleaseNotify(otherValue) = true, want false: a Node must not release a key held by another value")
	}
	quiet(t, notify, "Subscribe: notified of a ReleaseNotify that released nothing")
	if ok := must(t, "ReleaseNotify(value)")(nn.ReleaseNotify(ctx, k, v)); !ok {
		t.Fatal("ReleaseNotify(value) = false, want true")
	}
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe: no notification 5s after ReleaseNotify released the key")
	}
	if ok := must(t, "SetNX after ReleaseNotify")(n.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX after ReleaseNotify(value) = false, want true: ReleaseNotify must delete the key")
	}
}

func notifyStopsOnCancel(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, nn := notifier(t, newNode)
	k, other := key(t), key(t)
	notify := make(chan struct{}, 1)
	cancel, err := nn.Subscribe(ctx, k, notify)
	if err != nil {
		t.Fatalf("Subscribe: unexpected error %v", err)
	}
	v := value()
	must(t, "SetNX(other key)")(n.SetNX(ctx, other, v, time.Minute))
	must(t, "ReleaseNotify(other key)")(nn.ReleaseNotify(ctx, other, v))
	quiet(t, notify, "Subscribe(key): notified of the release of another key")
	cancel()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	must(t, "ReleaseNotify")(nn.ReleaseNotify(ctx, k, v))
	quiet(t, notify, "Subscribe: notified after cancel returned")
}

// notifyNeverBlocks subscribes with a channel that nobody reads and releases
// the key twice: the second notification must be dropped, not wait for a
// reader. cancel must then return, and another subscription on the node
// must hear its key's release. A Node that blocked on the send would stall
// its pub/sub connection, and every subscription sharing it, for good.
func notifyNeverBlocks(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, nn := notifier(t, newNode)
	k, v := key(t), value()
	cancel, err := nn.Subscribe(ctx, k, make(chan struct{})) // never read
	if err != nil {
		t.Fatalf("Subscribe: unexpected error %v", err)
	}
	for range 2 {
		must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
		must(t, "ReleaseNotify")(nn.ReleaseNotify(ctx, k, v))
	}
	time.Sleep(100 * time.Millisecond) // the notifications arrive
	if took, returned, _ := boundedCall(ctx, func(context.Context) error { cancel(); return nil }, 5*time.Second); !returned {
		t.Fatalf("Subscribe's cancel, with notifications waiting for a channel nobody reads, had not returned %v later: a Node must never block on a send to notify (a send that would block is dropped)", took)
	}
	k2 := key(t)
	notify := make(chan struct{}, 1)
	cancel2, err := nn.Subscribe(ctx, k2, notify)
	if err != nil {
		t.Fatalf("Subscribe after a subscription whose channel nobody read: unexpected error %v", err)
	}
	defer cancel2()
	must(t, "SetNX")(n.SetNX(ctx, k2, v, time.Minute))
	must(t, "ReleaseNotify")(nn.ReleaseNotify(ctx, k2, v))
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe: no notification 5s after ReleaseNotify, on a node that had a subscription whose channel nobody read: a Node must never block on a send to notify (a send that would block is dropped)")
	}
}

// notifyTwoSubscriptions subscribes twice to one key's releases, cancels the
// first subscription, and releases the key: the second must still be
// notified. Package redlock can hold two subscriptions to a key on a node at
// once: a waiter's subscription confirmed after the waiter got the lock is
// canceled then, while the next waiter's may already be in place. A Node that
// shares one server subscription per channel among its waiters must
// unsubscribe after the channel's last cancel, not its first: otherwise the
// next waiter hears no release and waits for its polls.
func notifyTwoSubscriptions(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n, nn := notifier(t, newNode)
	k, v := key(t), value()
	first, second := make(chan struct{}, 1), make(chan struct{}, 1)
	cancel1, err := nn.Subscribe(ctx, k, first)
	if err != nil {
		t.Fatalf("Subscribe: unexpected error %v", err)
	}
	cancel2, err := nn.Subscribe(ctx, k, second)
	if err != nil {
		cancel1()
		t.Fatalf("Subscribe (a second subscription to the key): unexpected error %v", err)
	}
	defer cancel2()
	cancel1()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	if ok := must(t, "ReleaseNotify(value)")(nn.ReleaseNotify(ctx, k, v)); !ok {
		t.Fatal("ReleaseNotify(value) = false, want true")
	}
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe: no notification 5s after ReleaseNotify to a subscription whose key had another subscription, canceled before the release: a Node must keep a subscription until its own cancel (with one server subscription per channel, unsubscribe after its last cancel, not its first)")
	}
	quiet(t, first, "Subscribe: notified after cancel returned")
}

// identityContext checks that driver.Identifier's Identity obeys its
// context as every call does: with a context already canceled, or past its
// deadline, it returns an error matching the context's (driver's checklist:
// the optional interfaces obey the same rules).
func identityContext(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	ider := as[driver.Identifier](t, newNode(t))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ider.Identity(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Identity with a canceled context = %v, want an error matching context.Canceled", err)
	}
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := ider.Identity(past); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Identity with a context past its deadline = %v, want an error matching context.DeadlineExceeded", err)
	}
}

// identityStable checks driver.Identifier: a node names at least one server,
// and the same ones when asked again.
func identityStable(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n := newNode(t)
	ider := as[driver.Identifier](t, n)
	first, err := ider.Identity(ctx)
	if err != nil {
		t.Fatalf("Identity: %v", err)
	}
	second, err := ider.Identity(ctx)
	if err != nil {
		t.Fatalf("Identity again: %v", err)
	}
	if len(first) == 0 || !slices.ContainsFunc(first, func(id string) bool { return slices.Contains(second, id) }) {
		t.Fatalf("Identity = %q, then %q: want IDs, and the same server named twice", first, second)
	}
	for _, id := range first {
		kind, hex, _ := strings.Cut(id, ":")
		if kind != "run" && kind != "node" || len(hex) != 40 || strings.Trim(hex, "0123456789abcdef") != "" {
			t.Fatalf("Identity = %q: want \"run:\" or \"node:\" and 40 hex digits, the server's run_id or node ID", first)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := ider.Identity(ctx); !errors.Is(err, driver.ErrClosed) {
		t.Fatalf("Identity after Close = %v, want driver.ErrClosed", err)
	}
}

func ttlOwnKey(t *testing.T, ctx context.Context, newNode func(*testing.T) driver.Node) {
	n := newNode(t)
	tt := as[driver.TTLer](t, n)
	k, v := key(t), value()
	ttlOf := func(call, val string) (time.Duration, bool) {
		t.Helper()
		d, held, err := tt.TTL(ctx, k, val)
		if err != nil {
			t.Fatalf("%s: unexpected error %v", call, err)
		}
		return d, held
	}
	if d, held := ttlOf("TTL(absent key)", v); held || d != 0 {
		t.Fatalf("TTL(absent key) = %v, %v; want 0, false: nothing holds the value", d, held)
	}
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	d, held := ttlOf("TTL(value)", v)
	if !held || d <= 50*time.Second || d > time.Minute {
		t.Fatalf("TTL(value) after SetNX(ttl=1m) = %v, %v; want true and a time to live in (50s, 1m]", d, held)
	}
	if d%time.Millisecond != 0 {
		t.Fatalf("TTL(value) = %v; want whole milliseconds, as PTTL gives", d)
	}
	if d, held := ttlOf("TTL(otherValue)", value()); held || d != 0 {
		t.Fatalf("TTL(otherValue) = %v, %v; want 0, false: a Node must not report a key held by another value", d, held)
	}
	must(t, "Extend(10s)")(n.Extend(ctx, k, v, 10*time.Second))
	if d, held := ttlOf("TTL(value) after Extend(10s)", v); !held || d > 10*time.Second || d <= 5*time.Second {
		t.Fatalf("TTL(value) after Extend(10s) = %v, %v; want true and a time to live in (5s, 10s]", d, held)
	}
	must(t, "EvalRelease")(n.EvalRelease(ctx, k, v))
	if d, held := ttlOf("TTL(value) after EvalRelease", v); held || d != 0 {
		t.Fatalf("TTL(value) after EvalRelease = %v, %v; want 0, false", d, held)
	}
	ttlRoundsDown(t, ctx, n, tt)
	ttlCountsDown(t, ctx, n, tt)
}

// ttlCountsDown sets a key, waits, and asks its TTL: what is left must have
// gone down by the wait. A Node that answered the TTL last given (SET's or
// PEXPIRE's) rather than the key's PTTL passes the checks above, which ask
// at once, and would tell Lock.TTL that keys a shorter PEXPIRE reached keep
// the time they had.
func ttlCountsDown(t *testing.T, ctx context.Context, n driver.Node, tt driver.TTLer) {
	t.Helper()
	const (
		ttl  = time.Minute
		wait = 200 * time.Millisecond
	)
	k, v := key(t), value()
	must(t, "SetNX(ttl=1m)")(n.SetNX(ctx, k, v, ttl))
	time.Sleep(wait)
	d, held, err := tt.TTL(ctx, k, v)
	if err != nil {
		t.Fatalf("TTL(value) %v after SetNX(ttl=%v): unexpected error %v", wait, ttl, err)
	}
	if !held || d > ttl-wait {
		t.Fatalf("TTL(value) %v after SetNX(ttl=%v) = %v, %v; want true and at most %v: TTL must return the time the key has left (PTTL), not the TTL it was given",
			wait, ttl, d, held, ttl-wait)
	}
}

// ttlRoundsDown sets a key for a TTL that is not whole seconds and asks its
// TTL at once: it must be at most the TTL given, and at least what is left of
// it after the time the two calls took (less the millisecond PTTL rounds
// away). A TTL rounded up (to whole seconds, say) would report a lock held
// after it expired; the ranges of ttlOwnKey cannot tell.
func ttlRoundsDown(t *testing.T, ctx context.Context, n driver.Node, tt driver.TTLer) {
	t.Helper()
	const ttl = 2500 * time.Millisecond
	k, v := key(t), value()
	start := time.Now()
	must(t, "SetNX(ttl=2.5s)")(n.SetNX(ctx, k, v, ttl))
	d, held, err := tt.TTL(ctx, k, v)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("TTL(value) after SetNX(ttl=2.5s): unexpected error %v", err)
	}
	if least := ttl - took.Truncate(time.Millisecond) - 2*time.Millisecond; !held || d > ttl || d < least {
		t.Fatalf("TTL(value) right after SetNX(ttl=%v) = %v, %v; want true and a time to live in [%v, %v], what is left of %v after the %v the two calls took: TTL must return the key's PTTL, rounded down to the millisecond, never more than is left (a TTL rounded up reports a lock held after it expired) nor much less",
			ttl, d, held, least, ttl, ttl, took)
	}
}
