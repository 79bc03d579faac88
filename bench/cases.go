package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// The parameters of the cases.
var (
	lockNodes     = []int{1, 3, 5}
	lockLockers   = []int{1, 64}
	extendNodes   = []int{1, 5}
	extendLockers = []int{64}
	handoffNodes  = []int{1, 5}
	stallLockers  = []int{1, 64}
	// handoffSetups are the Handoff case's Lockers (clients) and goroutines
	// on each (lockers per client): four clients of one locker each, as
	// four processes; a holder and one waiter; 8 clients of 4 waiters each.
	handoffSetups = []struct{ clients, per int }{{4, 1}, {2, 1}, {8, 4}}
	farLockers    = []int{1}
)

const (
	// handoffHold is how long a holder of the Handoff case keeps the key, as
	// if it worked under the lock: long enough that the waiters are waiting
	// (or sleeping between tries) when it releases.
	handoffHold = 10 * time.Millisecond
	// stallNodes is the number of nodes of the Stalled case, of which
	// stalledNodes are stalled.
	stallNodes   = 5
	stalledNodes = 2
	// stallOpTimeout bounds each lock+unlock of the Stalled case, for
	// contenders that would otherwise wait for a stalled node forever.
	stallOpTimeout = time.Second
	// farNodes is the number of nodes of the Far case, of which the last
	// farAway are behind a delay of farRoundTrip.
	farNodes     = 5
	farAway      = 2
	farRoundTrip = 40 * time.Millisecond
)

// Lock benchmarks lock+unlock, uncontended: each locker locks and unlocks a
// key of its own, over and over. Sub-benchmarks: nodes=1,3,5 × lockers=1,64
// (nodes above c.MaxNodes are left out). One operation is Lock then Unlock.
func Lock(b *testing.B, c Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(lockNodes))
	for _, nodes := range lockNodes {
		if !c.supports(nodes) {
			continue
		}
		for _, lockers := range lockLockers {
			name := fmt.Sprintf("nodes=%d/lockers=%d", nodes, lockers)
			withLocker(b, c, addrs[:nodes], name, lockers, nil, func(b *testing.B, lk Locker) {
				ctx, cancel := runContext(b)
				defer cancel()
				keys := newKeys("lock", lockers)
				measure(b, lockers, func(g int) error { return lockUnlock(ctx, lk, keys[g]) })
			})
		}
	}
}

// observeNodes and observeLockers are the parameters of the Observe case.
var (
	observeNodes   = 5
	observeLockers = []int{1, 64}
)

// Observe is the Lock case over 5 nodes, lockers=1,64, for contenders that
// differ only in the observers attached to their Client (none, a no-op
// redlock.Observer, redlockotel over no-op providers): what observation
// costs. One operation is Lock then Unlock.
func Observe(b *testing.B, c Contender) {
	b.Helper()
	addrs := Servers(b, observeNodes)
	for _, lockers := range observeLockers {
		name := fmt.Sprintf("nodes=%d/lockers=%d", observeNodes, lockers)
		withLocker(b, c, addrs, name, lockers, nil, func(b *testing.B, lk Locker) {
			ctx, cancel := runContext(b)
			defer cancel()
			keys := newKeys("observe", lockers)
			measure(b, lockers, func(g int) error { return lockUnlock(ctx, lk, keys[g]) })
		})
	}
}

// Extend benchmarks Extend on held locks: each locker extends a lock of its
// own, over and over. Sub-benchmarks: nodes=1,5 × lockers=64. One operation
// is one Extend. Contenders with NoExtend skip it.
func Extend(b *testing.B, c Contender) {
	b.Helper()
	if c.NoExtend {
		b.Skipf("%s does not extend locks on demand", c.Name)
	}
	addrs := Servers(b, slices.Max(extendNodes))
	for _, nodes := range extendNodes {
		if !c.supports(nodes) {
			continue
		}
		for _, lockers := range extendLockers {
			name := fmt.Sprintf("nodes=%d/lockers=%d", nodes, lockers)
			withLocker(b, c, addrs[:nodes], name, lockers, nil, func(b *testing.B, lk Locker) {
				ctx, cancel := runContext(b)
				defer cancel()
				held := make([]Held, lockers)
				defer func() {
					for _, h := range held {
						if h != nil {
							h.Unlock(ctx)
						}
					}
				}()
				for g, key := range newKeys("extend", lockers) {
					h, err := lk.Lock(ctx, key)
					if err != nil {
						b.Fatalf("%s: Lock: %v", c.Name, err)
					}
					held[g] = h
				}
				measure(b, lockers, func(g int) error {
					if err := held[g].Extend(ctx, TTL); err != nil {
						return fmt.Errorf("Extend: %w", err)
					}
					return nil
				})
			})
		}
	}
}

// Handoff benchmarks the hand-off of one contended key between lockers
// spread over several Lockers (clients), as separate processes would have.
// The holder keeps the key for 10ms, as if it worked under the lock, and
// releases it; it then waits until another locker holds the key before it
// calls Lock again, so every acquisition is a hand-off to a locker that was
// waiting. One operation is one hand-off (ns/op includes the 10ms); p50-ns
// and p99-ns are the hand-off latency, from the start of the holder's Unlock
// to the return of the next holder's Lock; wait-p50-ns and wait-max-ns are the
// time a locker waited in Lock, so that a starved waiter shows as a maximum
// far above the median. Sub-benchmarks: nodes=1,5 × clients/lockers: 4
// clients of one locker each (clients=4/lockers=4), a holder and one waiter
// (clients=2/lockers=2), and 8 clients of 4 lockers each (clients=8/lockers=32).
func Handoff(b *testing.B, c Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(handoffNodes))
	for _, nodes := range handoffNodes {
		if !c.supports(nodes) {
			continue
		}
		for _, setup := range handoffSetups {
			var lks []Locker
			name := fmt.Sprintf("nodes=%d/clients=%d/lockers=%d", nodes, setup.clients, setup.clients*setup.per)
			b.Run(name, func(b *testing.B) {
				if lks == nil {
					for range setup.clients {
						lk, err := c.Open(addrs[:nodes])
						if err != nil {
							b.Fatalf("%s: Open: %v", c.Name, err)
						}
						lks = append(lks, lk)
						ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
						err = warmUp(ctx, lk, setup.per)
						cancel()
						if err != nil {
							b.Fatalf("%s: %v", c.Name, err)
						}
					}
				}
				handoff(b, c, lks, setup.per)
			})
			for _, lk := range lks {
				if err := lk.Close(); err != nil {
					b.Errorf("%s: Close: %v", c.Name, err)
				}
			}
		}
	}
}

// handoff runs b.N hand-offs of one key between per lockers on each of lks.
func handoff(b *testing.B, c Contender, lks []Locker, per int) {
	ctx, cancel := runContext(b)
	defer cancel()
	var unlocks failures
	b.ResetTimer()
	lat, waits, err := handoffs(ctx, lks, per, b.N, newKeys("handoff", 1)[0], &unlocks)
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: %v", c.Name, err)
	}
	unlocks.check(b)
	report(b, lat)
	if len(waits) > 0 {
		slices.Sort(waits)
		b.ReportMetric(float64(percentile(waits, 0.50)), "wait-p50-ns")
		b.ReportMetric(float64(waits[len(waits)-1]), "wait-max-ns")
	}
}

// handoffs runs n hand-offs of key between per lockers on each of lks and
// returns the latency of each (from the start of the holder's Unlock to the
// return of the next holder's Lock) and how long each Lock that ended in a
// hand-off waited. Failed Unlocks go to unlocks (addUnlock); a failed Lock, or two
// lockers holding the key at once, stops the run with an error.
func handoffs(ctx context.Context, lks []Locker, per, n int, key string, unlocks *failures) (lat, waits []int64, err error) {
	lockCtx, stopLocking := context.WithCancel(ctx)
	defer stopLocking()
	var (
		acquisitions atomic.Int64
		releasedAt   atomic.Int64 // since start, when the last holder began to unlock
		holders      atomic.Int32
		mu           sync.Mutex
		acquired     = make(chan struct{}) // closed at the next acquisition
		errOnce      sync.Once
		wg           sync.WaitGroup
		waitsMu      sync.Mutex
	)
	lat = make([]int64, n)
	fail := func(e error) {
		errOnce.Do(func() { err = e })
		stopLocking()
	}
	start := time.Now()
	for g := range len(lks) * per {
		lk := lks[g%len(lks)]
		wg.Go(func() {
			for {
				t0 := time.Now()
				h, e := lk.Lock(lockCtx, key)
				waited := int64(time.Since(t0))
				if e != nil {
					if lockCtx.Err() == nil {
						fail(fmt.Errorf("Lock: %w", e))
					}
					return
				}
				if holders.Add(1) != 1 {
					fail(errors.New("two lockers hold the key at once"))
				}
				now := int64(time.Since(start))
				i := acquisitions.Add(1) - 1
				if i > 0 && i <= int64(n) {
					lat[i-1] = now - releasedAt.Load()
					waitsMu.Lock()
					waits = append(waits, waited)
					waitsMu.Unlock()
				}
				mu.Lock()
				close(acquired)
				acquired = make(chan struct{})
				next := acquired
				mu.Unlock()
				last := i >= int64(n)
				if last {
					stopLocking()
				} else {
					time.Sleep(handoffHold)
				}
				releasedAt.Store(int64(time.Since(start)))
				holders.Add(-1)
				if e := h.Unlock(ctx); e != nil {
					unlocks.addUnlock(fmt.Errorf("Unlock: %w", e))
				}
				if last {
					return
				}
				select {
				case <-next:
				case <-lockCtx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, waits, err
}

// Far benchmarks lock+unlock on five nodes of which two are far: behind a
// proxy that delays each direction by half of a 40ms round trip. A Redlock
// that decides on a quorum answers at the speed of the three near nodes;
// one that waits for every node, at the far ones'. One operation is Lock then
// Unlock; compare its p50 with that of Lock/nodes=5/lockers=1. Beside it,
// the same two nodes through the same proxy without a delay
// (nodes=5/proxied=2/lockers=1): the proxy's own cost, on the machine the
// client runs on, which a far network does not have; far=2 against it
// takes most of that cost out, not all of it: without a delay the proxy's
// work falls inside each operation, with one it falls 20ms later and in
// larger chunks, so proxied=2 can be the slower. Sub-benchmarks: nodes=5/far=2/lockers=1 and
// nodes=5/proxied=2/lockers=1. Contenders limited to fewer nodes skip it.
func Far(b *testing.B, c Contender) {
	b.Helper()
	if !c.supports(farNodes) {
		b.Skipf("%s locks over at most %d node(s)", c.Name, c.MaxNodes)
	}
	servers := Servers(b, farNodes)
	for _, v := range []struct {
		param string
		delay time.Duration
	}{{"far", farRoundTrip / 2}, {"proxied", 0}} {
		addrs := slices.Clone(servers)
		for i := farNodes - farAway; i < farNodes; i++ {
			p, err := newDelayProxy(servers[i], v.delay)
			if err != nil {
				b.Fatalf("delay proxy: %v", err)
			}
			b.Cleanup(func() { p.Close() })
			addrs[i] = p.Addr()
		}
		for _, lockers := range farLockers {
			name := fmt.Sprintf("nodes=%d/%s=%d/lockers=%d", farNodes, v.param, farAway, lockers)
			withLocker(b, c, addrs, name, lockers, nil, func(b *testing.B, lk Locker) {
				ctx, cancel := runContext(b)
				defer cancel()
				keys := newKeys(v.param, lockers)
				measure(b, lockers, func(g int) error { return lockUnlock(ctx, lk, keys[g]) })
			})
		}
	}
}

// Stalled benchmarks lock+unlock on five nodes of which two are stalled: their
// processes are stopped (SIGSTOP), so they accept connections and answer
// nothing. The Locker is opened and warmed up while all five answer, so that it
// holds connections to every node, as it would when servers stall in
// production. Each operation is given a context of 1s (redsync over redigo,
// whose commands take no context, ends its operations at the pool's 3s read
// timeout instead). Sub-benchmarks:
// nodes=5 × lockers=1,64, to compare with the same sub-benchmarks of Lock.
// Contenders limited to fewer nodes skip it.
func Stalled(b *testing.B, c Contender) {
	b.Helper()
	if !c.supports(stallNodes) {
		b.Skipf("%s locks over at most %d node(s)", c.Name, c.MaxNodes)
	}
	for _, lockers := range stallLockers {
		var (
			addrs []string
			stall func() (resume func(), err error)
		)
		if c.Stall != nil {
			addrs = Servers(b, stallNodes)
			stall = func() (func(), error) { return c.Stall(addrs[stallNodes-stalledNodes:]) }
		} else {
			// The servers to stall are fresh for each sub-benchmark, even when
			// the others are shared: a server resumed after a stall is busy for
			// a while with the connections and commands that queued up.
			own := redistest.NewServers(b, stalledNodes)
			addrs = append(Servers(b, stallNodes-stalledNodes), redistest.Addrs(own)...)
			stall = func() (func(), error) { return pause(own) }
		}
		ready := func(b *testing.B) func() {
			resume, err := stall()
			if err != nil {
				b.Fatalf("stall: %v", err)
			}
			return resume
		}
		name := fmt.Sprintf("nodes=%d/lockers=%d", stallNodes, lockers)
		withLocker(b, c, addrs, name, lockers, ready, func(b *testing.B, lk Locker) {
			ctx, cancel := runContext(b)
			defer cancel()
			keys := newKeys("stalled", lockers)
			measure(b, lockers, func(g int) error {
				opCtx, cancel := context.WithTimeout(ctx, stallOpTimeout)
				defer cancel()
				return lockUnlock(opCtx, lk, keys[g])
			})
		})
	}
}

// pause stops servers with SIGSTOP and returns the function that resumes them.
func pause(servers []*redistest.Server) (resume func(), err error) {
	resume = func() {
		for _, s := range servers {
			s.Resume()
		}
	}
	for _, s := range servers {
		if err := s.Pause(); err != nil {
			resume()
			return nil, err
		}
	}
	return resume, nil
}
