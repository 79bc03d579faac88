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

func (l rueidisLockLocker) Lock(ctx context.Context, key string) (bench.Held, error) {
	_, cancel, err := l.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return rueidisLockHeld(cancel), nil
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
