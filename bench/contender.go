package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TTL is the time to live of every lock taken by the suite, whatever the
// contender: long enough that no lock expires during a benchmark. It is the
// library's default.
const TTL = redlock.DefaultTTL

// A Locker is what a case drives: one lock implementation over a set of nodes,
// shared by the case's concurrent lockers. Its methods must be safe for
// concurrent use.
type Locker interface {
	// Lock acquires the lock named key, retrying as the implementation does
	// until it holds it or ctx is done.
	Lock(ctx context.Context, key string) (Held, error)
	// Close releases the Locker's clients and connections.
	Close() error
}

// Held is a lock that a Locker acquired.
type Held interface {
	// Extend sets the lock's time to live to ttl, or fails if the lock was lost.
	Extend(ctx context.Context, ttl time.Duration) error
	// Unlock releases the lock.
	Unlock(ctx context.Context) error
}

// A Doer is a Locker that also holds locks the way redlock.Client.Do does:
// it waits for the lock, runs fn while holding it, extends it in the
// background, and releases it when fn returns. fn's context is canceled when
// the lock is lost. The Scale case runs only contenders whose Locker is a
// Doer.
type Doer interface {
	Do(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// ErrNoExtend is what Held.Extend returns for contenders that cannot extend a
// lock on demand; the Extend case skips them (see Contender.NoExtend).
var ErrNoExtend = errors.New("bench: this contender does not extend locks on demand")

// A Contender is one lock implementation under test.
type Contender struct {
	// Name names the contender in benchmark names and reports: a driver's
	// registered name, a bare client's name for a floor, or a peer's name
	// ending in the client it runs over ("redsync-goredis").
	Name string
	// Open returns a Locker over the nodes at addrs, which are "host:port"
	// loopback addresses of independent redis-server processes.
	Open func(addrs []string) (Locker, error)
	// MaxNodes is the largest number of nodes the contender can lock over
	// (1 for a single-instance lock); 0 means any number.
	MaxNodes int
	// NoExtend says that the contender cannot extend a lock on demand; the
	// Extend case skips it.
	NoExtend bool
	// Stall, if set, makes the nodes at addrs stop answering, as a SIGSTOP
	// does to a redis-server, until resume is called; the Stalled case uses
	// it for contenders whose nodes are not redis-server processes. When nil,
	// the case stalls real servers with SIGSTOP.
	Stall func(addrs []string) (resume func(), err error)
}

// supports reports whether c can run with n nodes.
func (c Contender) supports(nodes int) bool { return c.MaxNodes == 0 || nodes <= c.MaxNodes }

// Driver returns the contender for the driver registered under name, which
// must be imported by the caller: a redlock.Client from redlock.Open(name,
// addrs, opts...).
func Driver(name string, opts ...redlock.Option) Contender {
	return Client(name, func(addrs []string) (*redlock.Client, error) {
		return redlock.Open(name, addrs, opts...)
	})
}

// Client returns a contender named name over the redlock.Clients that open
// returns, for a driver used through its constructor rather than the
// registry.
func Client(name string, open func(addrs []string) (*redlock.Client, error)) Contender {
	return Contender{
		Name: name,
		Open: func(addrs []string) (Locker, error) {
			c, err := open(addrs)
			if err != nil {
				return nil, err
			}
			return clientLocker{c}, nil
		},
	}
}

// clientLocker is a Locker over a redlock.Client; *redlock.Lock is its Held.
type clientLocker struct{ c *redlock.Client }

func (l clientLocker) Lock(ctx context.Context, key string) (Held, error) {
	lock, err := l.c.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return lock, nil
}

func (l clientLocker) Close() error { return l.c.Close() }

func (l clientLocker) Do(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	return l.c.Do(ctx, key, fn)
}

// Run runs the cases that need only the driver (Lock, Extend, Handoff,
// Stalled, Scale, Far) for one driver, given as a function that opens a
// redlock.Client over addresses, as a driver's own benchmark would; the cases
// made in turn with a client's floor (Lone, HandoffFloor) and Observe need
// what only this module's drivers have, and are left out:
//
//	func BenchmarkSuite(b *testing.B) {
//		bench.Run(b, func(addrs []string) (*redlock.Client, error) {
//			return redlock.Open("mydriver", addrs)
//		})
//	}
//
// The sub-benchmarks are named by case and parameters: Lock/nodes=5/lockers=64.
func Run(b *testing.B, open func(addrs []string) (*redlock.Client, error)) {
	b.Helper()
	c := Client("driver", open)
	for _, tc := range []struct {
		name string
		run  func(*testing.B, Contender)
	}{
		{"Lock", Lock},
		{"Extend", Extend},
		{"Handoff", Handoff},
		{"Stalled", Stalled},
		{"Scale", Scale},
		{"Far", Far},
	} {
		b.Run(tc.name, func(b *testing.B) { tc.run(b, c) })
	}
}
