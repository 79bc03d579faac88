package redlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// pairObserver counts, by kind and key, the starts of the calls that span
// time less their ends, the grants and the LockEnds, and what breaks the
// pairs at once (an end without its start, a negative Held).
type pairObserver struct {
	mu       sync.Mutex
	open     map[string]int // "kind/key": starts less ends
	granted  map[string]int // by key: attempts granted
	lockEnds map[string]int // by key
	broken   []string
}

func newPairObserver() *pairObserver {
	return &pairObserver{open: map[string]int{}, granted: map[string]int{}, lockEnds: map[string]int{}}
}

func (o *pairObserver) add(kind, key string, d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open[kind+"/"+key] += d; o.open[kind+"/"+key] < 0 {
		o.broken = append(o.broken, "an end without its start: "+kind+" of "+key)
	}
}

// pair reports the start of a call of kind on key, and returns its end.
func pair[D any](o *pairObserver, ctx context.Context, kind, key string) (context.Context, func(D)) {
	o.add(kind, key, 1)
	return ctx, func(D) { o.add(kind, key, -1) }
}

func (o *pairObserver) Do(ctx context.Context, e redlock.DoStart) (context.Context, func(redlock.DoDone)) {
	return pair[redlock.DoDone](o, ctx, "Do", e.Key)
}

func (o *pairObserver) Lock(ctx context.Context, e redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	return pair[redlock.LockDone](o, ctx, "Lock", e.Key)
}

func (o *pairObserver) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.add("Attempt", e.Key, 1)
	return ctx, func(d redlock.AttemptDone) {
		o.add("Attempt", e.Key, -1)
		if d.Outcome == redlock.OutcomeGranted {
			o.mu.Lock()
			o.granted[e.Key]++
			o.mu.Unlock()
		}
	}
}

func (o *pairObserver) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return pair[redlock.ExtendDone](o, ctx, "Extend", e.Key)
}

func (o *pairObserver) Unlock(ctx context.Context, e redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	return pair[redlock.UnlockDone](o, ctx, "Unlock", e.Key)
}

func (o *pairObserver) NodeCall(context.Context, redlock.NodeCall) {}

func (o *pairObserver) LockEnd(_ context.Context, e redlock.LockEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lockEnds[e.Key]++
	if e.Held < 0 {
		o.broken = append(o.broken, fmt.Sprintf("LockEnd with a negative Held: %+v", e))
	}
}

func (o *pairObserver) Wake(context.Context, redlock.Wake) {}

// holdingNode is a memory node whose calls can be held up past their
// context (as a node that queues commands holds them up to their bound,
// past the node timeout): while gated, a call waits for the gate to open.
type holdingNode struct {
	*memory.Node
	mu   sync.Mutex
	gate chan struct{}
}

func (n *holdingNode) pass() {
	n.mu.Lock()
	g := n.gate
	n.mu.Unlock()
	if g != nil {
		<-g
	}
}

// holdFor holds the node's calls for d.
func (n *holdingNode) holdFor(d time.Duration) {
	g := make(chan struct{})
	n.mu.Lock()
	n.gate = g
	n.mu.Unlock()
	time.Sleep(d)
	n.mu.Lock()
	n.gate = nil
	n.mu.Unlock()
	close(g)
}

func (n *holdingNode) SetNX(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.pass()
	return n.Node.SetNX(context.Background(), key, value, ttl)
}

func (n *holdingNode) Extend(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.pass()
	return n.Node.Extend(context.Background(), key, value, ttl)
}

func (n *holdingNode) EvalRelease(_ context.Context, key, value string) (bool, error) {
	n.pass()
	return n.Node.EvalRelease(context.Background(), key, value)
}

// Under random schedules of Do, Lock and TryLock on a few keys (unlocked,
// extended, asked their TTL, or left to expire while watched with Done),
// nodes down, stalled or holding calls up past their context, and a Close
// at a random moment, the observers see every start end (Observer: "every
// start has its end") and one LockEnd per granted lock ("LockEnd is called
// once per granted lock"): every lock here is unlocked, watched, or held
// by Do. Each seed runs in a bubble (testing/synctest), virtual time: 200
// seeds take a fraction of a second. It finds the Do granted its lock after
// Close had released the locks of Do, whose end was not reported before
// (see TestCloseDoGrantedAfterCloseLockEnd): 16 seeds of the first 3000,
// seed 144 the first of them.
func TestObserverPairsUnderFaults(t *testing.T) {
	for seed := range 200 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { observerPairsRun(t, uint64(seed)) })
		})
	}
}

func observerPairsRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	mem := []*memory.Node{memory.New(), memory.New(), memory.New()}
	gated := []*holdingNode{{Node: mem[0]}, {Node: mem[1]}, {Node: mem[2]}}
	obs := newPairObserver()
	c, err := redlock.New([]driver.Node{gated[0], gated[1], gated[2]}, redlock.WithObserver(obs),
		redlock.WithTTL(300*time.Millisecond), redlock.WithNodeTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		key := fmt.Sprintf("k%d", i%4)
		delay := time.Duration(rng.IntN(400)) * time.Millisecond
		hold := time.Duration(rng.IntN(500)) * time.Millisecond
		ctxFor := time.Duration(50+rng.IntN(600)) * time.Millisecond
		kind := rng.IntN(5)
		wg.Go(func() {
			time.Sleep(delay)
			ctx, cancel := context.WithTimeout(context.Background(), ctxFor)
			defer cancel()
			takeAndHold(ctx, c, key, kind, hold)
		})
	}
	for range rng.IntN(6) {
		n := rng.IntN(len(mem))
		at := time.Duration(rng.IntN(600)) * time.Millisecond
		d := time.Duration(rng.IntN(300)) * time.Millisecond
		fault := rng.IntN(3)
		wg.Go(func() {
			time.Sleep(at)
			switch fault {
			case 0:
				mem[n].SetDown(true)
				time.Sleep(d)
				mem[n].SetDown(false)
			case 1:
				mem[n].SetStalled(true)
				time.Sleep(d)
				mem[n].SetStalled(false)
			case 2:
				gated[n].holdFor(d)
			}
		})
	}
	closeAt := time.Duration(rng.IntN(900)) * time.Millisecond
	wg.Go(func() {
		time.Sleep(closeAt)
		c.Close()
	})
	wg.Wait()
	time.Sleep(time.Second) // past every TTL: the watched locks' timers
	synctest.Wait()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, b := range obs.broken {
		t.Errorf("seed %d: %s", seed, b)
	}
	for k, n := range obs.open {
		if n != 0 {
			t.Errorf("seed %d: %s: %d started and never ended", seed, k, n)
		}
	}
	for key, g := range obs.granted {
		if e := obs.lockEnds[key]; e != g {
			t.Errorf("seed %d: key %s: %d locks granted, %d LockEnds (Close at %v)", seed, key, g, e, closeAt)
		}
	}
	for key, e := range obs.lockEnds {
		if _, ok := obs.granted[key]; !ok {
			t.Errorf("seed %d: key %s: %d LockEnds, no lock granted", seed, key, e)
		}
	}
}

// takeAndHold takes key on c in one of five ways (kind), and holds it for
// hold: Do; Lock, an Extend, Unlock; TryLock, Unlock; TryLock left to
// expire, watched with Done; Lock, TTL twice, Unlock.
func takeAndHold(ctx context.Context, c *redlock.Client, key string, kind int, hold time.Duration) {
	switch kind {
	case 0:
		c.Do(ctx, key, func(ctx context.Context) error {
			select {
			case <-time.After(hold):
			case <-ctx.Done():
			}
			return nil
		})
	case 1:
		if l, err := c.Lock(ctx, key); err == nil {
			time.Sleep(hold)
			l.Extend(ctx, 300*time.Millisecond)
			l.Unlock(context.Background())
		}
	case 2:
		if l, err := c.TryLock(ctx, key); err == nil {
			time.Sleep(hold)
			l.Unlock(context.Background())
		}
	case 3:
		if l, err := c.TryLock(ctx, key); err == nil {
			<-l.Done()
		}
	case 4:
		if l, err := c.Lock(ctx, key); err == nil {
			time.Sleep(hold / 2)
			l.TTL(ctx)
			time.Sleep(hold / 2)
			l.TTL(ctx)
			l.Unlock(ctx)
		}
	}
}
