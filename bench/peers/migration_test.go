package peers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/go-redlock/redlock/bench"
	_ "github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The claims of docs/MIGRATING.md on running a peer beside this library
// during a migration, with real servers: redsync and bsm/redislock store a
// lock as this library does (SET key value NX PX on the key itself), so that a
// lock held through one of them is refused to the other on the same nodes and
// key (with WithKeyPrefix, redsync's name must carry the prefix), both ways;
// rueidislock stores its locks under keys of its own, so that the two never
// exclude each other.

func openRedlock(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.Open("goredis", addrs, append([]redlock.Option{redlock.WithTTL(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refused checks that err is a refusal by a quorum of the nodes (the key held
// elsewhere), not an outage.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	var votes *redlock.VoteError
	if !errors.Is(err, redlock.ErrNotObtained) || errors.Is(err, redlock.ErrUnavailable) ||
		!errors.As(err, &votes) || votes.Refused < votes.Needed {
		t.Fatalf("%s: want ErrNotObtained refused by a quorum, got %v", what, err)
	}
}

func TestMigrationRedsyncExcludes(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	addrs := redistest.Addrs(servers)
	ctx := context.Background()
	var pools []redsyncredis.Pool
	for _, addr := range addrs {
		c := bench.NewGoRedis(addr)
		t.Cleanup(func() { c.Close() })
		pools = append(pools, redsyncgoredis.NewPool(c))
	}
	rs := redsync.New(pools...)

	for _, tc := range []struct {
		name, redsyncKey string
		opts             []redlock.Option
	}{
		{"no prefix", "job", nil},
		{"prefix", "lock:job", []redlock.Option{redlock.WithKeyPrefix("lock:")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := openRedlock(t, addrs, tc.opts...)

			// redsync holds it: this library is refused.
			m := rs.NewMutex(tc.redsyncKey, redsync.WithExpiry(10*time.Second))
			if err := m.TryLockContext(ctx); err != nil {
				t.Fatalf("redsync TryLock: %v", err)
			}
			_, err := client.TryLock(ctx, "job")
			refused(t, "TryLock while redsync holds the key", err)
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync Unlock: %v, %v", ok, err)
			}

			// This library holds it: redsync is refused by a quorum.
			l, err := client.TryLock(ctx, "job")
			if err != nil {
				t.Fatalf("TryLock after redsync's Unlock: %v", err)
			}
			m = rs.NewMutex(tc.redsyncKey, redsync.WithExpiry(10*time.Second))
			var taken *redsync.ErrTaken
			if err := m.TryLockContext(ctx); !errors.As(err, &taken) {
				t.Fatalf("redsync TryLock while this library holds the key: want *redsync.ErrTaken, got %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if err := m.TryLockContext(ctx); err != nil {
				t.Fatalf("redsync TryLock after Unlock: %v", err)
			}
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync Unlock: %v, %v", ok, err)
			}
		})
	}
}

func TestMigrationRedislockExcludes(t *testing.T) {
	server := redistest.NewServer(t)
	ctx := context.Background()
	rdb := bench.NewGoRedis(server.Addr())
	t.Cleanup(func() { rdb.Close() })
	locker := redislock.New(rdb)
	client := openRedlock(t, []string{server.Addr()}) // one node, as redislock's

	held, err := locker.Obtain(ctx, "job", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("redislock Obtain: %v", err)
	}
	_, err = client.TryLock(ctx, "job")
	refused(t, "TryLock while redislock holds the key", err)
	if err := held.Release(ctx); err != nil {
		t.Fatalf("redislock Release: %v", err)
	}

	l, err := client.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock after redislock's Release: %v", err)
	}
	if _, err := locker.Obtain(ctx, "job", 10*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("redislock Obtain while this library holds the key: want redislock.ErrNotObtained, got %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func TestMigrationRueidislockDoesNotExclude(t *testing.T) {
	server := redistest.NewServer(t)
	ctx := context.Background()
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true},
		KeyMajority:  1,
		KeyValidity:  10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locker.Close)
	client := openRedlock(t, []string{server.Addr()})

	_, cancel, err := locker.TryWithContext(ctx, "job")
	if err != nil {
		t.Fatalf("rueidislock TryWithContext: %v", err)
	}
	defer cancel()
	// Both hold "job" at once: their keys differ (rueidislock:0:job, job).
	l, err := client.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock while rueidislock holds the same name: want it granted (no shared key), got %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
