package conformance_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
)

// brokenDriver opens nodes of the goredis driver that break one rule of the
// driver contract each, by kind, as a Redis driver's author might: the
// suite's RunRedis must fail them (TestSuiteFailsOnBrokenNodes).
type brokenDriver struct{ kind string }

func (d brokenDriver) Open(addr string) (driver.Node, error) {
	inner, err := goredis.Driver{}.Open(addr)
	if err != nil {
		return nil, err
	}
	n := &brokenRedis{kind: d.kind, inner: inner}
	if d.kind == "close-waits-calls" {
		return &unqueued{node: n}, nil
	}
	if d.kind == "sends-queued" {
		// A client of its own, as if the user's, which Close leaves open.
		opt := &redis.Options{Addr: addr}
		if strings.Contains(addr, "://") {
			if opt, err = redis.ParseURL(addr); err != nil {
				return nil, err
			}
		}
		opt.MaxRetries, opt.DisableIdentity = -1, true
		n.raw, n.slot = redis.NewClient(opt), make(chan struct{}, 1)
	}
	if (d.kind == "nonatomic" || d.kind == "twoscripts" || d.kind == "multi") && !strings.Contains(addr, "://") {
		// A client of its own for the commands it sends one by one; only for
		// a host:port address, which is what Commands/Atomic gives it.
		n.raw = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	}
	return n, nil
}

// brokenRedis is a goredis node that breaks the rule its kind names:
//
//   - nonatomic: SetNX is SETNX then PEXPIRE; EvalRelease, Extend and the
//     fencing calls GET and compare on the client, then DEL, PEXPIRE, GET
//     or SET.
//   - twoscripts: EvalRelease and Extend GET the key with one script,
//     compare on the client, then DEL or PEXPIRE it with another.
//   - multi: SetNX is MULTI, SET key value NX PX ttl, EXEC.
//   - swallow-replies: an error reply to EvalRelease or Extend is (false, nil).
//   - flat-replies: an error reply to any call but SetNX becomes an error
//     that does not wrap it.
//   - busy-refuses: SetNX reads the server's BUSY reply (a script runs too
//     long) as a key held by another, (false, nil).
//   - ex-seconds: TTLs are rounded up to whole seconds.
//   - value-in-error: errors name the lock value.
//   - leaky-close: Close forgets to close the connections.
//   - waits-past-context: SetNX retries, on contexts of its own, until the
//     server answers.
//   - close-waits: Close waits for the server to answer a last command.
//   - ttl-no-expiry: TTL of a key without a time to live (PTTL -1) is
//     (-1ms, true, nil).
//   - sends-queued: SetNX sends one call at a time, on a client of its own
//     that Close leaves open, and queues the others (driver.Queuer), which it
//     still sends after Close.
//   - identity-made-up: Identity names the address, not the server.
//   - subscribe-unconfirmed: Subscribe returns without waiting for the
//     server's confirmation once the node has a pub/sub connection up.
//   - ignores-network-timeout: a node that queues (driver.Queuer) bounds its
//     calls by their context alone, never applying the network timeout
//     (driver.WithNetworkTimeout) it is given.
//   - close-waits-calls: a node without a queue (not a driver.Queuer; see
//     unqueued) whose Close waits for the calls in flight to end.
//   - refusal-unnamed: the error of a call refused by a server at its
//     maxclients limit is an end of file, without the server's reason, as
//     rueidis reports it.
//   - waits-without-deadline: a call whose context has no deadline is sent
//     again, on contexts of its own, until the server answers, as redigo's
//     pipelines read their replies without any deadline then.
type brokenRedis struct {
	kind    string
	inner   driver.Node
	raw     *redis.Client // for nonatomic, twoscripts, multi and sends-queued
	slot    chan struct{} // sends-queued: held by the call in flight
	waiting atomic.Int32  // sends-queued: the calls queued for slot
	closed  atomic.Bool
	// subscribed is set once a subscription was confirmed, for
	// subscribe-unconfirmed: the pub/sub connection it shares is up.
	subscribed atomic.Bool
}

// Pending is the inner node's queue, or sends-queued's own.
func (n *brokenRedis) Pending() driver.Pending {
	if n.kind == "sends-queued" {
		return driver.Pending{Depth: int(n.waiting.Load())}
	}
	return n.inner.(driver.Queuer).Pending()
}

func (n *brokenRedis) String() string { return fmt.Sprint(n.inner) }

// err applies the kind's handling of errors to an error of call.
func (n *brokenRedis) err(ctx context.Context, call, value string, ok bool, err error) (bool, error) {
	if err == nil {
		return ok, nil
	}
	reply := driver.PermanentCode(err) != "" && ctx.Err() == nil
	switch {
	case n.kind == "value-in-error":
		return false, fmt.Errorf("brokendriver: %s(value %q): %w", call, value, err)
	case n.kind == "swallow-replies" && reply && (call == "EvalRelease" || call == "Extend"):
		return false, nil
	case n.kind == "flat-replies" && reply && call != "SetNX":
		return false, errors.New("brokendriver: " + call + " failed: " + err.Error())
	case n.kind == "busy-refuses" && call == "SetNX" && strings.Contains(err.Error(), ": BUSY "):
		return false, nil
	case n.kind == "refusal-unnamed" && strings.Contains(err.Error(), "max number of clients reached"):
		return false, fmt.Errorf("brokendriver: %s: %w", call, io.EOF)
	}
	return ok, err
}

// ctx is the context a call passes to the inner node: for
// ignores-network-timeout, ctx without its network timeout
// (driver.WithNetworkTimeout), which the node then never applies.
func (n *brokenRedis) ctx(ctx context.Context) context.Context {
	if n.kind == "ignores-network-timeout" {
		return noNetworkTimeout{ctx}
	}
	return ctx
}

// noNetworkTimeout hides the network timeout of its context, the one value
// of package driver that is a time.Duration.
type noNetworkTimeout struct{ context.Context }

func (c noNetworkTimeout) Value(key any) any {
	v := c.Context.Value(key)
	if _, ok := v.(time.Duration); ok {
		return nil
	}
	return v
}

// ttl applies the kind's handling of TTLs.
func (n *brokenRedis) ttl(ttl time.Duration) time.Duration {
	if n.kind == "ex-seconds" {
		return (ttl + time.Second - 1).Truncate(time.Second)
	}
	return ttl
}

// nonatomic reports whether n sends its own commands for the calls its kind
// breaks, on a host:port address (what Commands/Atomic gives it).
func (n *brokenRedis) nonatomic() bool { return n.raw != nil && n.kind == "nonatomic" }

// twoscripts is as nonatomic, for the twoscripts kind.
func (n *brokenRedis) twoscripts() bool { return n.raw != nil && n.kind == "twoscripts" }

// holds is the client-side compare of nonatomic and twoscripts; twoscripts
// reads the key with a script.
func (n *brokenRedis) holds(ctx context.Context, key, value string) (bool, error) {
	var got string
	var err error
	if n.kind == "twoscripts" {
		got, err = n.raw.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{key}).Text()
	} else {
		got, err = n.raw.Get(ctx, key).Result()
	}
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return got == value, err
}

// untilAnswered calls call with a context of its own, without deadline,
// until it returns anything but a network error: it waits for a stalled
// server for as long as the server stalls.
func untilAnswered(call func(context.Context) error) error {
	for {
		err := call(context.Background())
		if err == nil || errors.Is(err, driver.ErrClosed) || driver.PermanentCode(err) != "" {
			return err
		}
	}
}

// waitsForServer reports whether a call with ctx waits for the server
// whatever its context (waits-past-context), or does when ctx has no
// deadline (waits-without-deadline).
func (n *brokenRedis) waitsForServer(ctx context.Context) bool {
	_, bounded := ctx.Deadline()
	return n.kind == "waits-past-context" || n.kind == "waits-without-deadline" && !bounded
}

func (n *brokenRedis) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.waitsForServer(ctx) {
		var ok bool
		err := untilAnswered(func(ctx context.Context) (err error) {
			ok, err = n.inner.SetNX(ctx, key, value, ttl)
			return err
		})
		return ok, err
	}
	if n.nonatomic() {
		ok, err := n.raw.SetNX(ctx, key, value, 0).Result()
		if err != nil || !ok {
			return ok, err
		}
		return true, n.raw.PExpire(ctx, key, ttl).Err()
	}
	if n.raw != nil && n.kind == "multi" {
		var set *redis.Cmd
		_, err := n.raw.TxPipelined(ctx, func(p redis.Pipeliner) error {
			set = p.Do(ctx, "SET", key, value, "NX", "PX", ttl.Milliseconds())
			return nil
		})
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil && set.Val() == "OK", err
	}
	if n.kind == "sends-queued" {
		n.waiting.Add(1)
		select {
		case n.slot <- struct{}{}:
			n.waiting.Add(-1)
		case <-ctx.Done():
			n.waiting.Add(-1)
			return false, ctx.Err()
		}
		defer func() { <-n.slot }()
		return n.raw.SetNX(ctx, key, value, ttl).Result() // closed or not
	}
	ok, err := n.inner.SetNX(n.ctx(ctx), key, value, n.ttl(ttl))
	return n.err(ctx, "SetNX", value, ok, err)
}

func (n *brokenRedis) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if n.nonatomic() || n.twoscripts() {
		if ok, err := n.holds(ctx, key, value); !ok || err != nil {
			return false, err
		}
		if n.twoscripts() {
			d, err := n.raw.Eval(ctx, "return redis.call('DEL', KEYS[1])", []string{key}).Int64()
			return d == 1, err
		}
		d, err := n.raw.Del(ctx, key).Result()
		return d == 1, err
	}
	if n.kind == "waits-without-deadline" && n.waitsForServer(ctx) {
		var ok bool
		err := untilAnswered(func(ctx context.Context) (err error) {
			ok, err = n.inner.EvalRelease(ctx, key, value)
			return err
		})
		return ok, err
	}
	ok, err := n.inner.EvalRelease(n.ctx(ctx), key, value)
	return n.err(ctx, "EvalRelease", value, ok, err)
}

func (n *brokenRedis) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.nonatomic() || n.twoscripts() {
		if ok, err := n.holds(ctx, key, value); !ok || err != nil {
			return false, err
		}
		if n.twoscripts() {
			return n.raw.Eval(ctx, "return redis.call('PEXPIRE', KEYS[1], ARGV[1])", []string{key}, ttl.Milliseconds()).Bool()
		}
		return n.raw.PExpire(ctx, key, ttl).Result()
	}
	if n.kind == "waits-without-deadline" && n.waitsForServer(ctx) {
		var ok bool
		err := untilAnswered(func(ctx context.Context) (err error) {
			ok, err = n.inner.Extend(ctx, key, value, ttl)
			return err
		})
		return ok, err
	}
	ok, err := n.inner.Extend(n.ctx(ctx), key, value, n.ttl(ttl))
	return n.err(ctx, "Extend", value, ok, err)
}

func (n *brokenRedis) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	if n.kind == "leaky-close" {
		return nil
	}
	if n.kind == "close-waits" {
		untilAnswered(func(ctx context.Context) error {
			_, err := n.inner.EvalRelease(ctx, "brokendriver:close", "")
			return err
		})
	}
	if n.raw != nil && n.kind != "sends-queued" {
		n.raw.Close()
	}
	return n.inner.Close()
}

func (n *brokenRedis) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	if n.nonatomic() {
		ok, err := n.SetNX(ctx, key, value, ttl)
		if err != nil {
			return false, 0, err
		}
		var counter uint64
		for _, fk := range append([]string{fenceKey}, driver.OldFenceKeys(key, fenceKey)...) {
			c, err := n.raw.Get(ctx, fk).Uint64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return false, 0, err
			}
			counter = max(counter, c)
		}
		return ok, counter, nil
	}
	ok, counter, err := n.inner.(driver.Fencer).SetNXFence(n.ctx(ctx), key, value, n.ttl(ttl), fenceKey)
	ok, err = n.err(ctx, "SetNXFence", value, ok, err)
	return ok, counter, err
}

func (n *brokenRedis) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	if n.nonatomic() {
		if ok, err := n.holds(ctx, key, value); !ok || err != nil {
			return false, err
		}
		c, err := n.raw.Get(ctx, fenceKey).Uint64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		if c < token {
			err = n.raw.Set(ctx, fenceKey, token, 0).Err()
		}
		return err == nil, err
	}
	ok, err := n.inner.(driver.Fencer).RaiseFence(n.ctx(ctx), key, value, fenceKey, token)
	return n.err(ctx, "RaiseFence", value, ok, err)
}

func (n *brokenRedis) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	ok, err := n.inner.(driver.Notifier).ReleaseNotify(n.ctx(ctx), key, value)
	return n.err(ctx, "ReleaseNotify", value, ok, err)
}

// Subscribe, for subscribe-unconfirmed, waits for the server's confirmation
// only while the node has no pub/sub connection up (none confirmed yet), as
// a node that shares one would if it sent SSUBSCRIBE on it and returned.
func (n *brokenRedis) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	inner := n.inner.(driver.Notifier)
	if n.kind != "subscribe-unconfirmed" || !n.subscribed.Load() {
		cancel, err := inner.Subscribe(ctx, key, notify)
		if err == nil {
			n.subscribed.Store(true)
		}
		return cancel, err
	}
	var (
		mu       sync.Mutex
		stop     func()
		canceled bool
	)
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		c, err := inner.Subscribe(sctx, key, notify)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && canceled {
			c()
			return
		}
		stop = c
	}()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		canceled = true
		if stop != nil {
			stop()
		}
	}, nil
}

func (n *brokenRedis) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	d, held, err := n.inner.(driver.TTLer).TTL(ctx, key, value)
	if n.kind == "ttl-no-expiry" && err != nil && strings.Contains(err.Error(), "PTTL -1") {
		return -time.Millisecond, true, nil // the script's -1, read as a duration
	}
	held, err = n.err(ctx, "TTL", value, held, err)
	return d, held, err
}

// Identity makes up an ID from the node's address, for "identity-made-up":
// well formed, the same every time and distinct for distinct addresses, but
// not the server's, so that two addresses of one server do not share it.
func (n *brokenRedis) Identity(ctx context.Context) ([]string, error) {
	ids, err := n.inner.(driver.Identifier).Identity(ctx)
	if n.kind == "identity-made-up" && err == nil {
		return []string{fmt.Sprintf("run:%x", sha1.Sum([]byte(n.String())))}, nil
	}
	return ids, err
}

// unqueued is a brokenRedis that is no driver.Queuer: it holds one, to
// expose none of its optional interfaces, and its Close waits for the SetNX
// calls in flight (close-waits-calls).
type unqueued struct {
	node  *brokenRedis
	calls sync.WaitGroup
}

func (n *unqueued) String() string { return n.node.String() }

func (n *unqueued) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.calls.Add(1)
	defer n.calls.Done()
	return n.node.SetNX(ctx, key, value, ttl)
}

func (n *unqueued) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.node.EvalRelease(ctx, key, value)
}

func (n *unqueued) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.node.Extend(ctx, key, value, ttl)
}

func (n *unqueued) Close() error {
	n.calls.Wait()
	return n.node.Close()
}
