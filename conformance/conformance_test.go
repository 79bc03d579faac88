package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redistest"
)

// The suite passing on a correct node is shown by the memory driver's tests
// (drivers/memory) and by every Redis driver's. Here it must fail on nodes
// that each break one rule, with a message that names the rule.

// broken wraps a correct memory node and breaks one rule.
type broken struct {
	*memory.Node
	kind string
}

// text cuts s at its first NUL byte and replaces its invalid UTF-8, as a
// Node that took keys and values for text would, for "mangle".
func (b broken) text(s string) string {
	if b.kind != "mangle" {
		return s
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// closedErr replaces driver.ErrClosed by an error that does not wrap it, for
// "close-not-errclosed".
func (b broken) closedErr(err error) error {
	if b.kind == "close-not-errclosed" && errors.Is(err, driver.ErrClosed) {
		return errors.New("brokennode: node is closed")
	}
	return err
}

func (b broken) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if b.kind == "setnx-overwrites" {
		b.Node.Delete(key)
	}
	if b.kind == "ttl-truncated" {
		ttl = ttl.Truncate(time.Millisecond)
	}
	ok, err := b.Node.SetNX(ctx, b.text(key), b.text(value), ttl)
	if b.kind == "ttl-given" && ok {
		b.given(key, ttl)
	}
	if b.kind == "setnx-refused-sets-ttl" || b.kind == "extend-others-ttl" {
		b.holder(ctx, key, value, ttl, ok, err)
	}
	return ok, b.closedErr(err)
}

// holders are the values the "setnx-refused-sets-ttl" and
// "extend-others-ttl" nodes set, by node and key.
var holders = struct {
	sync.Mutex
	m map[*memory.Node]map[string]string
}{m: make(map[*memory.Node]map[string]string)}

// holder records the value a SetNX set, and, for "setnx-refused-sets-ttl",
// gives the key's holder the TTL of a SetNX that the key refused, as a Node
// that sent PEXPIRE whatever SET NX answered would.
func (b broken) holder(ctx context.Context, key, value string, ttl time.Duration, ok bool, err error) {
	holders.Lock()
	defer holders.Unlock()
	if holders.m[b.Node] == nil {
		holders.m[b.Node] = make(map[string]string)
	}
	switch {
	case err != nil:
	case ok:
		holders.m[b.Node][key] = value
	case b.kind == "setnx-refused-sets-ttl":
		b.Node.Extend(ctx, key, holders.m[b.Node][key], ttl)
	}
}

// givenTTLs are the TTLs the "ttl-given" nodes last gave their keys, by
// node and key.
var givenTTLs = struct {
	sync.Mutex
	m map[*memory.Node]map[string]time.Duration
}{m: make(map[*memory.Node]map[string]time.Duration)}

// given records the TTL a SetNX or Extend gave key, for "ttl-given".
func (b broken) given(key string, ttl time.Duration) {
	givenTTLs.Lock()
	defer givenTTLs.Unlock()
	if givenTTLs.m[b.Node] == nil {
		givenTTLs.m[b.Node] = make(map[string]time.Duration)
	}
	givenTTLs.m[b.Node][key] = ttl.Truncate(time.Millisecond)
}

func (b broken) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if b.kind == "release-others" {
		return b.Node.Delete(key), nil
	}
	ok, err := b.Node.EvalRelease(ctx, b.text(key), b.text(value))
	return ok, b.closedErr(err)
}

func (b broken) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	key, value = b.text(key), b.text(value)
	if b.kind == "extend-creates" {
		if ok, err := b.Node.SetNX(ctx, key, value, ttl); ok || err != nil {
			return ok, err
		}
	}
	if b.kind == "ignores-context" {
		ctx = context.Background()
	}
	if b.kind == "extend-half-ttl" {
		ttl /= 2
	}
	ok, err := b.Node.Extend(ctx, key, value, ttl)
	if b.kind == "ttl-given" && ok {
		b.given(key, ttl)
	}
	if b.kind == "extend-others-ttl" && err == nil && !ok {
		// PEXPIRE sent whatever value the key holds, and a refusal
		// answered for another's key: the holder's key gets this TTL.
		holders.Lock()
		b.Node.Extend(ctx, key, holders.m[b.Node][key], ttl)
		holders.Unlock()
	}
	return ok, b.closedErr(err)
}

// closes counts the Close calls of the "close-again-errs" nodes.
var closes = struct {
	sync.Mutex
	m map[*memory.Node]int
}{m: make(map[*memory.Node]int)}

// Close fails every Close but the first, for "close-again-errs", as a
// client library's own Close often does.
func (b broken) Close() error {
	err := b.Node.Close()
	if b.kind != "close-again-errs" {
		return err
	}
	closes.Lock()
	defer closes.Unlock()
	if closes.m[b.Node]++; closes.m[b.Node] > 1 {
		return errors.New("brokennode: already closed")
	}
	return err
}

// ownFenceKey is where a Node keeps the counter of key: at fenceKey, or,
// for "fence-own-key", at a counter of its own per lock key (the legacy
// one), whatever fenceKey the caller gave.
func (b broken) ownFenceKey(key, fenceKey string) string {
	if b.kind == "fence-own-key" {
		return driver.LegacyFenceKey(key)
	}
	return fenceKey
}

// SetNXFence keeps the key for half its TTL, for "fence-half-ttl", and
// fails on a counter above math.MaxInt64, as a Node that parsed it with
// strconv.ParseInt would, for "fence-int64".
func (b broken) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	if b.kind == "fence-half-ttl" {
		ttl /= 2
	}
	fenceKey = b.ownFenceKey(key, fenceKey)
	ok, counter, err := b.Node.SetNXFence(ctx, key, value, ttl, fenceKey)
	if b.kind == "fence-int64" && err == nil && counter > math.MaxInt64 {
		_, perr := strconv.ParseInt(strconv.FormatUint(counter, 10), 10, 64)
		return false, 0, fmt.Errorf("brokennode: fencing counter: %w", perr)
	}
	return ok, counter, err
}

// RaiseFence writes the counter where SetNXFence reads it (see ownFenceKey),
// and, for "raise-absent", raises it for a key that nothing holds too, as a
// script that compared the value only when the key exists would.
func (b broken) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	if b.kind == "raise-absent" && !b.Node.Holds(key) {
		if _, err := b.Node.SetNX(ctx, key, value, time.Minute); err != nil {
			return false, err
		}
		defer b.Node.Delete(key)
	}
	return b.Node.RaiseFence(ctx, key, value, b.ownFenceKey(key, fenceKey), token)
}

// TTL reports a key held by any value as held, for "ttl-any-value",
// rounds the time to live up to whole seconds, for "ttl-whole-seconds", and
// answers the TTL the key was last given rather than what it has left, for
// "ttl-given".
func (b broken) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	d, held, err := b.Node.TTL(ctx, key, value)
	if b.kind == "ttl-given" && held {
		givenTTLs.Lock()
		d = givenTTLs.m[b.Node][key]
		givenTTLs.Unlock()
	}
	if b.kind == "ttl-whole-seconds" && held {
		d = (d + time.Second - 1).Truncate(time.Second)
	}
	if b.kind == "ttl-any-value" && err == nil && !held {
		if d, ok := b.Node.PTTL(key); ok {
			return d.Truncate(time.Millisecond), true, nil
		}
	}
	return d, held, err
}

// Subscribe forwards each notification to notify with a send that waits for
// a reader, and its cancel waits for the forwarding to end, for
// "notify-blocks".
func (b broken) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if b.kind == "notify-cancels-all" {
		return b.subscribeShared(ctx, key, notify)
	}
	if b.kind != "notify-blocks" {
		return b.Node.Subscribe(ctx, key, notify)
	}
	inner := make(chan struct{}, 1)
	cancel, err := b.Node.Subscribe(ctx, key, inner)
	if err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-inner:
				notify <- struct{}{}
			case <-stop:
				return
			}
		}
	}()
	return func() { cancel(); close(stop); <-done }, nil
}

// sharedSubs are the subscriptions of the "notify-cancels-all" nodes, by
// node and key.
var sharedSubs = struct {
	sync.Mutex
	m map[*memory.Node]map[string][]func()
}{m: make(map[*memory.Node]map[string][]func())}

// subscribeShared subscribes as a Node that shares one server subscription
// per channel among its waiters and unsubscribes the channel when any of
// them cancels (SUNSUBSCRIBE after the first cancel, not the last), for
// "notify-cancels-all": every subscription to the key ends.
func (b broken) subscribeShared(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	cancel, err := b.Node.Subscribe(ctx, key, notify)
	if err != nil {
		return nil, err
	}
	sharedSubs.Lock()
	defer sharedSubs.Unlock()
	if sharedSubs.m[b.Node] == nil {
		sharedSubs.m[b.Node] = make(map[string][]func())
	}
	sharedSubs.m[b.Node][key] = append(sharedSubs.m[b.Node][key], sync.OnceFunc(cancel))
	return func() {
		sharedSubs.Lock()
		all := sharedSubs.m[b.Node][key]
		delete(sharedSubs.m[b.Node], key)
		sharedSubs.Unlock()
		for _, c := range all {
			c()
		}
	}, nil
}

const brokenEnv = "CONFORMANCE_BROKEN_KIND"

// brokenKinds are the broken nodes the suite must fail, by kind, with the
// message it must fail them with. A memory node (broken) runs Run; a Redis
// driver (brokenDriver, broken_redis_test.go) runs the subtests of RunRedis
// that redis names.
var brokenKinds = map[string]struct {
	redis   string // RunRedis's subtest to run, "Open/ACLUser" say; "" for a memory node and Run
	want    string
	notWant string // a message that would blame the wrong defect
}{
	"release-others": {want: "EvalRelease(otherValue) = true, want false: a Node must not release a key held by another value",
		notWant: "a Node must send values as bytes"},
	"setnx-overwrites":    {want: "SetNX(otherValue) = true, want false: a Node must not set a key held by another value (NX)"},
	"ttl-truncated":       {want: "SetNX(ttl=500µs) error = memory: invalid expire time: a TTL must be positive, want none (SetNX(ttl=1m) succeeded): a TTL below 1ms must be rounded up to 1ms"},
	"extend-creates":      {want: "Extend(absent key) = true, want false: there was nothing to extend"},
	"ignores-context":     {want: "Extend(canceled ctx) error = <nil>, want one matching context.Canceled: a Node must honour its context, and a call that failed must return its error, never (false, nil)"},
	"ttl-any-value":       {want: "want 0, false: a Node must not report a key held by another value"},
	"ttl-whole-seconds":   {want: "TTL must return the key's PTTL, rounded down to the millisecond, never more than is left"},
	"notify-blocks":       {want: "a Node must never block on a send to notify"},
	"notify-cancels-all":  {want: "a Node must keep a subscription until its own cancel"},
	"extend-half-ttl":     {want: "a Node must keep an extended key for its whole TTL"},
	"fence-half-ttl":      {want: "SetNXFence(ttl=300ms): the key was free after"},
	"fence-int64":         {want: "SetNXFence: unexpected error brokennode: fencing counter: strconv.ParseInt"},
	"fence-own-key":       {want: "a Node must keep the counter at the fenceKey it is given"},
	"mangle":              {want: "are distinct locks; a Node must send keys as bytes"},
	"close-not-errclosed": {want: "SetNX after Close: error = brokennode: node is closed, want one matching driver.ErrClosed"},
	"nonatomic": {redis: "Commands/Atomic",
		want: `EvalRelease(value) (scripts loaded) sent ["get" "conformance:`},
	"twoscripts": {redis: "Commands/Atomic",
		want: `EvalRelease(value) (scripts loaded) ran 2 commands on keys, not one (it sent ["eval" "return redis.call('GET', KEYS[1])"`},
	"multi": {redis: "Commands/Atomic",
		want: `"NX" "PX" "60000"; "exec"]): MULTI/EXEC is not allowed; a Node must send each lock command on its own`},
	"swallow-replies": {redis: "Open/ACLUser",
		want: `EvalRelease as the ACL user on a key outside its pattern: error = <nil> (driver.PermanentCode ""), want one for which driver.PermanentCode is "NOPERM"`},
	"flat-replies": {redis: "Open/ACLUser",
		want: `Extend as the ACL user on a key outside its pattern: error = brokendriver: Extend failed: `},
	"busy-refuses": {redis: "Replies/Busy",
		want: "SetNX while a script runs too long: = false, nil; want the server's BUSY reply as an error: a Node must never turn an error reply into a verdict"},
	"ex-seconds": {redis: "TTL/Milliseconds",
		want: "SetNX(ttl=2.5s): the server's PTTL of the key right after = "},
	"value-in-error": {redis: "Open/Password",
		want: "shows the lock value"},
	"leaky-close": {redis: "Close/ReleasesConnections",
		want: "Close must release the node's connections, its pub/sub connection included"},
	"waits-past-context": {redis: "Stalled/DeadlineBoundsCalls",
		want: "SetNX on a stalled server (connected before: true) with a 200ms deadline had not returned"},
	"ttl-no-expiry": {redis: "TTLer/NoExpiry",
		want: "TTL of a key that holds the value without a time to live (PTTL -1) = -1ms, true, nil; want an error"},
	"close-waits": {redis: "Stalled/CloseDoesNotWait",
		want: "Close of a node whose server does not answer had not returned"},
	"sends-queued": {redis: "Stalled/CloseSendsNoQueuedCall",
		want: "failed with an error matching driver.ErrClosed: the others were sent after Close"},
	"subscribe-unconfirmed": {redis: "Stalled/DeadlineBoundsCalls",
		want: "Subscribe must return only once the server has confirmed the subscription"},
	"identity-made-up": {redis: "Identifier/NamesServer",
		want: "want one that includes the server's run_id"},
	"ignores-network-timeout": {redis: "Stalled/NetworkTimeoutBoundsCalls",
		want: "must bound a command's time on the network by the network timeout it is given"},
	"close-waits-calls": {redis: "Stalled/CloseSendsNoQueuedCall",
		want: "Close of a node with calls waiting on a server that does not answer"},
	"refusal-unnamed": {redis: "Refused/MaxClients",
		want: `want one that says "max number of clients reached": a server that refuses a connection with an error reply`},
	"waits-without-deadline": {redis: "Stalled/NoDeadlineCallsEnd",
		want: "a node must bound by its own timeouts what a context does not"},
	"extend-others-ttl": {
		want: "Extend(otherValue, 1ms) must not change the key, nor its time to live"},
	"setnx-refused-sets-ttl": {
		want: "a refused SetNX must not change the key, nor its time to live"},
	"close-again-errs": {
		want: "Close() again = brokennode: already closed, want nil"},
	"raise-absent": {
		want: "RaiseFence(value, 9) after EvalRelease(value) = true, want false: only the holder may write its token"},
	"ttl-given": {
		want: "TTL must return the time the key has left (PTTL), not the TTL it was given"},
}

// TestBrokenNodeHelper runs the suite on a broken node when started by
// TestSuiteFailsOnBrokenNodes; otherwise it does nothing.
func TestBrokenNodeHelper(t *testing.T) {
	kind := os.Getenv(brokenEnv)
	if kind == "" {
		t.Skip("run by TestSuiteFailsOnBrokenNodes")
	}
	if brokenKinds[kind].redis != "" {
		conformance.RunRedis(t, brokenDriver{kind})
		return
	}
	conformance.Run(t, func(t *testing.T) driver.Node { return broken{memory.New(), kind} })
}

func TestSuiteFailsOnBrokenNodes(t *testing.T) {
	for kind, c := range brokenKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			run := "^TestBrokenNodeHelper$"
			if c.redis != "" {
				redistest.NewServer(t) // skips, as RunRedis would, without redis-server
				for name := range strings.SplitSeq(c.redis, "/") {
					run += "/^" + regexp.QuoteMeta(name) + "$"
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+kind, "GORACE="+withoutExitSleep(os.Getenv("GORACE")))
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed on a node that breaks %q; output:\n%s", kind, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("the suite failed on %q without the message %q; output:\n%s", kind, c.want, out)
			}
			if c.notWant != "" && strings.Contains(string(out), c.notWant) {
				t.Fatalf("the suite failed on %q with the message %q, which blames another defect; output:\n%s", kind, c.notWant, out)
			}
		})
	}
}

// withoutExitSleep returns the GORACE options gorace with atexit_sleep_ms=0
// added, unless they set atexit_sleep_ms already: a test binary built with
// -race sleeps a second before it exits otherwise (1000ms by default,
// whenever it has more than one thread, as every Go program has), for
// nothing the helper runs check. The races a run meets are still reported,
// and still fail it: the race runtime waits for the reports under way
// before it exits, with or without the sleep.
func withoutExitSleep(gorace string) string {
	for opt := range strings.FieldsSeq(gorace) {
		if strings.HasPrefix(opt, "atexit_sleep_ms=") {
			return gorace
		}
	}
	return strings.TrimSpace(gorace + " atexit_sleep_ms=0")
}

// TestExample runs the tests of the package's example (example_test.go).
func TestExample(t *testing.T) {
	t.Run("RunRedis/WithAddress", testQueryDriver)
	t.Run("Run", testNodes)
}
