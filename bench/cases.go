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
)

const (
	// handoffLockers contend for the key of the Handoff case: one holder and
	// three waiters.
	handoffLockers = 4
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

// Handoff benchmarks the hand-off of one contended key between four lockers,
// each with a Locker of its own, as separate processes would have. The holder
// keeps the key for 10ms, as if it worked under the lock, and releases it; it
// then waits until another locker holds the key before it calls Lock again, so
// every acquisition is a hand-off to a locker that was waiting. One operation
// is one hand-off (ns/op includes the 10ms); p50-ns and p99-ns are the
// hand-off latency, from the start of the holder's Unlock to the return of the
// next holder's Lock. Sub-benchmarks: nodes=1,5 × lockers=4.
func Handoff(b *testing.B, c Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(handoffNodes))
	for _, nodes := range handoffNodes {
		if !c.supports(nodes) {
			continue
		}
		var lks []Locker
		b.Run(fmt.Sprintf("nodes=%d/lockers=%d", nodes, handoffLockers), func(b *testing.B) {
			if lks == nil {
				for range handoffLockers {
					lk, err := c.Open(addrs[:nodes])
					if err != nil {
						b.Fatalf("%s: Open: %v", c.Name, err)
					}
					lks = append(lks, lk)
					ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
					err = warmUp(ctx, lk, 1)
					cancel()
					if err != nil {
						b.Fatalf("%s: %v", c.Name, err)
					}
				}
			}
			handoff(b, c, lks)
		})
		for _, lk := range lks {
			if err := lk.Close(); err != nil {
				b.Errorf("%s: Close: %v", c.Name, err)
			}
		}
	}
}

// handoff runs b.N hand-offs of one key between lks.
func handoff(b *testing.B, c Contender, lks []Locker) {
	ctx, cancel := runContext(b)
	defer cancel()
	lockCtx, stopLocking := context.WithCancel(ctx)
	defer stopLocking()
	var (
		key          = newKeys("handoff", 1)[0]
		n            = int64(b.N)
		lat          = make([]int64, b.N)
		acquisitions atomic.Int64
		releasedAt   atomic.Int64 // since start, when the last holder began to unlock
		holders      atomic.Int32
		mu           sync.Mutex
		acquired     = make(chan struct{}) // closed at the next acquisition
		errOnce      sync.Once
		err          error // stops the run
		unlocks      failures
		wg           sync.WaitGroup
	)
	fail := func(e error) {
		errOnce.Do(func() { err = e })
		stopLocking()
	}
	b.ResetTimer()
	start := time.Now()
	for _, lk := range lks {
		wg.Go(func() {
			for {
				h, e := lk.Lock(lockCtx, key)
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
				if i > 0 && i <= n {
					lat[i-1] = now - releasedAt.Load()
				}
				mu.Lock()
				close(acquired)
				acquired = make(chan struct{})
				next := acquired
				mu.Unlock()
				last := i >= n
				if last {
					stopLocking()
				} else {
					time.Sleep(handoffHold)
				}
				releasedAt.Store(int64(time.Since(start)))
				holders.Add(-1)
				if e := h.Unlock(ctx); e != nil {
					unlocks.add(fmt.Errorf("Unlock: %w", e))
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
	b.StopTimer()
	if err != nil {
		b.Fatalf("%s: %v", c.Name, err)
	}
	unlocks.check(b)
	report(b, lat)
}

// Stalled benchmarks lock+unlock on five nodes of which two are stalled: their
// processes are stopped (SIGSTOP), so they accept connections and answer
// nothing. The Locker is opened and warmed up while all five answer, so that it
// holds connections to every node, as it would when servers stall in
// production. Each operation is bounded by a context of 1s. Sub-benchmarks:
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
