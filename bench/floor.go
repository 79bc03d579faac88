package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
)

// floorValue is the value every floor sets: as long as a lock value
// (rand.Text), but fixed, since generating it is lock logic.
var floorValue = strings.Repeat("F", 26)

// Floors returns the floor of each client: the same commands as a driver's
// lock+unlock, made by hand with the bare client (NewGoRedis, NewRedigoPool,
// NewRueidis, NewValkey): SET key value NX PX ttl on every node at once, a goroutine per
// node, then the release script (driver.ReleaseNotifyScript, which also publishes on
// driver.ReleaseChannel(key)) by EVALSHA on every
// node at once; and no lock logic: no random value, no quorum, no validity.
// Run under the Lock case, a floor is what the client can do; a driver's
// throughput over its client's floor is what the library costs. Floors
// neither extend nor wait: a floor's Lock fails if any node refuses.
func Floors() []Contender { return floors(floorMode{}) }

// DelFloors returns the floors of Floors that release with a plain DEL
// instead of the release script: the least a client can do for lock+unlock,
// shown beside the fair floor.
func DelFloors() []Contender { return floors(floorMode{del: true}) }

// WaitingFloors returns the floors of Floors whose Lock waits, as a Redlock
// waiter must, for the least such a waiter can do by hand with its client
// (see floorLocker.lockWaiting): the floor of a hand-off (HandoffFloor).
func WaitingFloors() []Contender { return floors(floorMode{wait: true}) }

// floorMode is how a floor differs from the fair one of Floors.
type floorMode struct {
	del  bool // release with DEL rather than the release script
	wait bool // Lock waits for the key (lockWaiting)
}

func floors(mode floorMode) []Contender {
	return []Contender{
		floor("goredis", mode, func(addr string) (floorNode, error) { return goredisFloor{NewGoRedis(addr)}, nil }),
		floor("redigo", mode, func(addr string) (floorNode, error) { return redigoFloor{NewRedigoPool(addr), addr}, nil }),
		floor("rueidis", mode, func(addr string) (floorNode, error) {
			c, err := NewRueidis(addr)
			if err != nil {
				return nil, err
			}
			return rueidisFloor{c}, nil
		}),
		floor("valkeygo", mode, func(addr string) (floorNode, error) {
			c, err := NewValkey(addr)
			return valkeyFloor{c}, err
		}),
	}
}

// floorNode is one node of a floor, through one bare client.
type floorNode interface {
	setNX(ctx context.Context, key, value string) (bool, error)
	del(ctx context.Context, key string) error
	// release runs the release script by EVALSHA (by EVAL on NOSCRIPT),
	// with channel, driver.ReleaseChannel(key), as its second argument.
	release(ctx context.Context, key, value, channel string) error
	// subscribe listens on channel with SSUBSCRIBE, on a connection of its
	// own, and sends to notify, without blocking, at each message; it
	// returns once the server confirmed the subscription. stop ends it.
	subscribe(ctx context.Context, channel string, notify chan<- struct{}) (stop func(), err error)
	close() error
}

// The release script of the floors: the drivers' own, which also publishes
// the release on the key's channel (driver.ReleaseNotifyScript, with
// driver.ReleaseChannel(key) as ARGV[2]): every Redis driver of this module
// releases with it, so that waiters in other Clients wake at once.
var (
	releaseSource = driver.ReleaseNotifyScript().Source()
	releaseSHA1   = driver.ReleaseNotifyScript().SHA1()
)

// isNoScript reports whether err is the server's NOSCRIPT reply.
func isNoScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }

// checkReleased turns a release script's reply (1 if it deleted the key) into
// an error, errNotHeld, when it did not.
func checkReleased(n int64, err error) error {
	if err == nil && n != 1 {
		err = fmt.Errorf("%w (reply %d)", errNotHeld, n)
	}
	return err
}

// errNotHeld is a release of a key that the node did not hold.
var errNotHeld = errors.New("release: the key was not held")

func floor(name string, mode floorMode, open func(addr string) (floorNode, error)) Contender {
	return Contender{
		Name:     name,
		NoExtend: true,
		Open: func(addrs []string) (Locker, error) {
			nodes := make([]floorNode, 0, len(addrs))
			for _, a := range addrs {
				n, err := open(a)
				if err != nil {
					for _, n := range nodes {
						n.close()
					}
					return nil, err
				}
				nodes = append(nodes, n)
			}
			l := &floorLocker{nodes: nodes, mode: mode, value: floorValue}
			if mode.wait { // its own, since the lockers of a hand-off release each other's keys
				l.value = rand.Text()
			}
			return l, nil
		},
	}
}

// floorLocker fans each command out to every node and waits for all.
type floorLocker struct {
	nodes []floorNode
	mode  floorMode
	value string    // what it sets: floorValue, or its own (WaitingFloors)
	subs  floorSubs // lockWaiting's subscriptions
}

// floorHeld is a key set on every node of a floorLocker (on a majority, by
// lockWaiting: the SETs of the others may still be running, their answers
// to come on late).
type floorHeld struct {
	l    *floorLocker
	key  string
	late *lateSets
}

func (l *floorLocker) Lock(ctx context.Context, key string) (Held, error) {
	if l.mode.wait {
		return l.lockWaiting(ctx, key)
	}
	err := l.each(func(n floorNode) error {
		ok, err := n.setNX(ctx, key, l.value)
		if err == nil && !ok {
			err = fmt.Errorf("SET NX %s: key exists", key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return floorHeld{l: l, key: key}, nil
}

func (h floorHeld) Unlock(ctx context.Context) error {
	h.late.wait(ctx) // a release sent before a SET could be applied before it
	if h.l.mode.del {
		return h.l.each(func(n floorNode) error { return n.del(ctx, h.key) })
	}
	ch := driver.ReleaseChannel(h.key) // once for every node, as a driver's Unlock does
	return h.l.each(func(n floorNode) error {
		err := n.release(ctx, h.key, h.l.value, ch)
		if h.l.mode.wait && errors.Is(err, errNotHeld) {
			return nil // held at a majority: the others may have refused it
		}
		return err
	})
}

func (floorHeld) Extend(context.Context, time.Duration) error { return ErrNoExtend }

// each runs f on every node at once, a goroutine per node, and waits for all.
func (l *floorLocker) each(f func(floorNode) error) error {
	if len(l.nodes) == 1 {
		return f(l.nodes[0])
	}
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (l *floorLocker) Close() error {
	l.subs.stop()
	var errs []error
	for _, n := range l.nodes {
		errs = append(errs, n.close())
	}
	return errors.Join(errs...)
}

var ttlMillis = driver.Milliseconds(TTL)

type goredisFloor struct{ c *goredis.Client }

func (f goredisFloor) setNX(ctx context.Context, key, value string) (bool, error) {
	err := f.c.Do(ctx, "SET", key, value, "NX", "PX", ttlMillis).Err()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	return err == nil, err
}

func (f goredisFloor) del(ctx context.Context, key string) error { return f.c.Del(ctx, key).Err() }
func (f goredisFloor) release(ctx context.Context, key, value, ch string) error {
	n, err := f.c.EvalSha(ctx, releaseSHA1, []string{key}, value, ch).Int64()
	if isNoScript(err) {
		n, err = f.c.Eval(ctx, releaseSource, []string{key}, value, ch).Int64()
	}
	return checkReleased(n, err)
}

func (f goredisFloor) close() error { return f.c.Close() }

type redigoFloor struct {
	p    *redigo.Pool
	addr string
}

func (f redigoFloor) do(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := f.p.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return redigo.DoContext(c, ctx, cmd, args...)
}

func (f redigoFloor) setNX(ctx context.Context, key, value string) (bool, error) {
	reply, err := f.do(ctx, "SET", key, value, "NX", "PX", ttlMillis)
	return reply == "OK", err
}

func (f redigoFloor) del(ctx context.Context, key string) error {
	_, err := f.do(ctx, "DEL", key)
	return err
}

func (f redigoFloor) release(ctx context.Context, key, value, ch string) error {
	n, err := redigo.Int64(f.do(ctx, "EVALSHA", releaseSHA1, 1, key, value, ch))
	if isNoScript(err) {
		n, err = redigo.Int64(f.do(ctx, "EVAL", releaseSource, 1, key, value, ch))
	}
	return checkReleased(n, err)
}

func (f redigoFloor) close() error { return f.p.Close() }

type rueidisFloor struct{ c rueidis.Client }

func (f rueidisFloor) setNX(ctx context.Context, key, value string) (bool, error) {
	cmd := f.c.B().Set().Key(key).Value(value).Nx().PxMilliseconds(ttlMillis).Build()
	err := f.c.Do(ctx, cmd).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (f rueidisFloor) del(ctx context.Context, key string) error {
	return f.c.Do(ctx, f.c.B().Del().Key(key).Build()).Error()
}

func (f rueidisFloor) release(ctx context.Context, key, value, ch string) error {
	n, err := f.c.Do(ctx, f.c.B().Evalsha().Sha1(releaseSHA1).Numkeys(1).Key(key).Arg(value, ch).Build()).AsInt64()
	if isNoScript(err) {
		n, err = f.c.Do(ctx, f.c.B().Eval().Script(releaseSource).Numkeys(1).Key(key).Arg(value, ch).Build()).AsInt64()
	}
	return checkReleased(n, err)
}

func (f rueidisFloor) close() error {
	f.c.Close()
	return nil
}

type valkeyFloor struct{ c valkey.Client }

func (f valkeyFloor) setNX(ctx context.Context, key, value string) (bool, error) {
	err := f.c.Do(ctx, f.c.B().Set().Key(key).Value(value).Nx().PxMilliseconds(ttlMillis).Build()).Error()
	return err == nil, nilIf(valkey.IsValkeyNil, err)
}

func (f valkeyFloor) del(ctx context.Context, key string) error {
	return f.c.Do(ctx, f.c.B().Del().Key(key).Build()).Error()
}

func (f valkeyFloor) release(ctx context.Context, key, value, ch string) error {
	n, err := f.c.Do(ctx, f.c.B().Evalsha().Sha1(releaseSHA1).Numkeys(1).Key(key).Arg(value, ch).Build()).AsInt64()
	if isNoScript(err) {
		n, err = f.c.Do(ctx, f.c.B().Eval().Script(releaseSource).Numkeys(1).Key(key).Arg(value, ch).Build()).AsInt64()
	}
	return checkReleased(n, err)
}

func (f valkeyFloor) close() error { f.c.Close(); return nil }

// nilIf returns err, or nil if isNil(err): a nil reply, which is no error.
func nilIf(isNil func(error) bool, err error) error {
	if isNil(err) {
		return nil
	}
	return err
}
