package peers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"

	"github.com/go-redlock/redlock/bench"
)

// All returns every peer: redsync over each client, then the single-node
// locks.
func All() []bench.Contender {
	return []bench.Contender{
		Redsync("goredis"), Redsync("redigo"), Redsync("rueidis"),
		RedisLock(), RueidisLock(),
	}
}

// Redsync returns github.com/go-redsync/redsync/v4 over client ("goredis",
// "redigo" or "rueidis"; rueidis through redsync's own rueidiscompat pool),
// named "redsync-" + client. A Mutex is made for every Lock, with the TTL and
// unlimited tries (Lock waits until it holds the lock or ctx ends, as the
// others' Lock does); everything else is redsync's default: waits of 50 to
// 250ms between tries, and no fail-fast, so it waits for every node.
func Redsync(client string) bench.Contender {
	return bench.Contender{
		Name: "redsync-" + client,
		Open: func(addrs []string) (bench.Locker, error) {
			l := &redsyncLocker{opts: []redsync.Option{
				redsync.WithExpiry(bench.TTL),
				redsync.WithTries(math.MaxInt32),
			}}
			pools := make([]redsyncredis.Pool, 0, len(addrs))
			for _, addr := range addrs {
				switch client {
				case "goredis":
					c := bench.NewGoRedis(addr)
					l.closers = append(l.closers, c.Close)
					pools = append(pools, redsyncgoredis.NewPool(c))
				case "redigo":
					p := bench.NewRedigoPool(addr)
					l.closers = append(l.closers, p.Close)
					pools = append(pools, redsyncredigo.NewPool(p))
				case "rueidis":
					c, err := bench.NewRueidis(addr)
					if err != nil {
						l.Close()
						return nil, err
					}
					l.closers = append(l.closers, func() error { c.Close(); return nil })
					pools = append(pools, redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)))
				default:
					return nil, fmt.Errorf("peers: redsync over unknown client %q", client)
				}
			}
			l.rs = redsync.New(pools...)
			return l, nil
		},
	}
}

type redsyncLocker struct {
	rs      *redsync.Redsync
	opts    []redsync.Option
	closers []func() error
}

func (l *redsyncLocker) Lock(ctx context.Context, key string) (bench.Held, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

func (l *redsyncLocker) Close() error {
	var errs []error
	for _, c := range l.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

type redsyncHeld struct{ m *redsync.Mutex }

// Extend extends to the Mutex's expiry, bench.TTL: redsync takes no TTL here.
func (h redsyncHeld) Extend(ctx context.Context, _ time.Duration) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: extend failed")
	}
	return err
}

func (h redsyncHeld) Unlock(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock failed")
	}
	return err
}

// RedisLock returns github.com/bsm/redislock over the go-redis client, named
// "redislock". It locks one node. It does not retry by default; Lock retries
// with redislock.ExponentialBackoff(10ms, 250ms), the bounds of the redlock
// library's default backoff.
func RedisLock() bench.Contender {
	return bench.Contender{
		Name:     "redislock",
		MaxNodes: 1,
		Open: func(addrs []string) (bench.Locker, error) {
			if len(addrs) != 1 {
				return nil, fmt.Errorf("peers: redislock locks one node, not %d", len(addrs))
			}
			c := bench.NewGoRedis(addrs[0])
			return &redisLockLocker{c: redislock.New(c), close: c.Close}, nil
		},
	}
}

type redisLockLocker struct {
	c     *redislock.Client
	close func() error
}

func (l *redisLockLocker) Lock(ctx context.Context, key string) (bench.Held, error) {
	opt := &redislock.Options{RetryStrategy: redislock.ExponentialBackoff(10*time.Millisecond, 250*time.Millisecond)}
	lock, err := l.c.Obtain(ctx, key, bench.TTL, opt)
	if err != nil {
		return nil, err
	}
	return redisLockHeld{lock}, nil
}

func (l *redisLockLocker) Close() error { return l.close() }

type redisLockHeld struct{ l *redislock.Lock }

func (h redisLockHeld) Extend(ctx context.Context, ttl time.Duration) error {
	return h.l.Refresh(ctx, ttl, nil)
}

func (h redisLockHeld) Unlock(ctx context.Context) error { return h.l.Release(ctx) }

// RueidisLock returns rueidis' github.com/redis/rueidis/rueidislock, named
// "rueidislock". It locks one node, here with one key (KeyMajority 1, where
// its default is two keys of three on the same server), with the TTL as
// KeyValidity, and client-side caching on (its default), by which a waiter is
// woken when the key is deleted. It extends locks by itself, not on demand,
// so it skips the Extend case; its unlock is the cancel function it returns.
func RueidisLock() bench.Contender {
	return bench.Contender{
		Name:     "rueidislock",
		MaxNodes: 1,
		NoExtend: true,
		Open: func(addrs []string) (bench.Locker, error) {
			if len(addrs) != 1 {
				return nil, fmt.Errorf("peers: rueidislock locks one node, not %d", len(addrs))
			}
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{
				ClientOption: rueidis.ClientOption{InitAddress: addrs, ForceSingleClient: true},
				KeyMajority:  1,
				KeyValidity:  bench.TTL,
			})
			if err != nil {
				return nil, err
			}
			return rueidisLockLocker{l}, nil
		},
	}
}

type rueidisLockLocker struct{ l rueidislock.Locker }

// rueidisWaitBound bounds one wait of a rueidislock waiter (see
// rueidisLockLocker.Lock): the TTL, the longest a key left by a failed or
// lost unlock stays.
const rueidisWaitBound = bench.TTL

// Lock waits for the lock as rueidislock's WithContext does, but at most
// rueidisWaitBound at a time before it tries again. With client-side
// caching, rueidislock's waiter has no timer of its own: it tries again only
// when an invalidation of the key, or a release by its own Locker, wakes it,
// and otherwise waits until its context ends. A waiter whose try failed
// before the server tracked the key for it (a call that timed out on a
// loaded machine) is never woken: one operation of a peer waited out the run
// context (5 minutes; bench/peers took 334 s in a CI run where it takes
// 32-43). The lock's own context is not the bounded one: WithContext derives
// the lock's context from the one it is given and releases the lock when
// that ends, so the bound cancels a context of its own, and a lock granted as
// the bound fired is released and tried for again.
func (l rueidisLockLocker) Lock(ctx context.Context, key string) (bench.Held, error) {
	for {
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		bound := time.AfterFunc(rueidisWaitBound, stop)
		stopAfter := context.AfterFunc(ctx, stop)
		_, unlock, err := l.l.WithContext(wctx, key)
		fired := !bound.Stop()
		ended := !stopAfter()
		if err == nil && !fired && !ended {
			return rueidisLockHeld(func() { unlock(); stop() }), nil
		}
		if err == nil {
			unlock() // granted as the bound fired or ctx ended: its context is canceled
		}
		stop()
		switch {
		case ctx.Err() != nil:
			return nil, errors.Join(err, ctx.Err())
		case !fired:
			return nil, err
		}
	}
}

func (l rueidisLockLocker) Close() error {
	l.l.Close()
	return nil
}

type rueidisLockHeld context.CancelFunc

func (rueidisLockHeld) Extend(context.Context, time.Duration) error { return bench.ErrNoExtend }

// Unlock cancels the lock, which deletes its key and returns when done.
func (h rueidisLockHeld) Unlock(context.Context) error {
	h()
	return nil
}
