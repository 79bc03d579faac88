package safety_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// unsafeClass names a fault outside Redlock's model. A schedule of such a
// class must end in a double grant that the checker catches.
type unsafeClass int

const (
	safeSchedule      unsafeClass = iota
	restartNoPersist              // a majority restarts empty (memory Node.Forget)
	steppedClock                  // node clocks jump forward past the TTL
	evictedEarly                  // the key is evicted from a majority (Node.Delete)
	numUnsafeClasses  = 3
	unsafeEvery       = 10 // every tenth seed is an unsafe schedule
	unsafeClassString = "safe restart-without-persistence stepped-clock evicted-early"
)

func (c unsafeClass) String() string { return strings.Fields(unsafeClassString)[c] }

// keepsCounters says whether the nodes keep their fencing counters through
// the class's fault: a stepped clock or an evicted lock key leaves them (they
// never expire), a restart without persistence loses them.
func (c unsafeClass) keepsCounters() bool { return c != restartNoPersist }

// schedule is everything about one simulated run that is drawn from its seed
// before it starts; the actors and the fault injector draw the rest from
// generators seeded from it too.
type schedule struct {
	seed        uint64
	class       unsafeClass
	nodes       int   // 3–7
	clients     int   // 2–8
	actors      []int // per client, the number of goroutines that use it: 1–2
	keys        []string
	ops         int // per actor
	ttl         time.Duration
	nodeTimeout time.Duration
	driftFactor float64
	fencing     bool
	backoffMin  time.Duration
	backoffMax  time.Duration
	rates       []float64 // node clock rates, off 1 by less than the drift factor
	faultGap    time.Duration
}

// rng returns a generator for stream of the schedule: each goroutine that
// draws has a stream of its own, so that what it draws does not depend on
// how the goroutines interleave.
func (s *schedule) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(s.seed, stream))
}

func newSchedule(seed uint64) *schedule {
	r := rand.New(rand.NewPCG(seed, 0))
	s := &schedule{seed: seed}
	if seed%unsafeEvery == unsafeEvery-1 {
		s.class = unsafeClass(1 + (seed/unsafeEvery)%numUnsafeClasses)
	}
	s.nodes = 3 + r.IntN(5)
	s.clients = 2 + r.IntN(7)
	nkeys := 1 + r.IntN(3)
	if s.class != safeSchedule {
		// Contention on one key, long waits: a double grant needs a rival
		// waiting when the fault strikes.
		s.clients = max(s.clients, 3)
		nkeys = 1
	}
	for i := range nkeys {
		s.keys = append(s.keys, fmt.Sprintf("k%d", i))
	}
	s.actors = make([]int, s.clients)
	for i := range s.actors {
		s.actors[i] = 1 + r.IntN(2)
	}
	s.ops = 2 + r.IntN(4)
	s.ttl = []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second}[r.IntN(4)]
	switch r.IntN(3) {
	case 0:
		s.nodeTimeout = min(s.ttl/10, 200*time.Millisecond) // the default
	default:
		// From TTL/40 to TTL/10: a release whose outcome is unknown is
		// repeated every node timeout for up to a TTL.
		s.nodeTimeout = drawDur(r, s.ttl/40, s.ttl/10)
	}
	s.driftFactor = []float64{0.01, 0.01, 0.02, 0.05}[r.IntN(4)]
	s.fencing = r.IntN(3) == 0
	s.backoffMin = time.Duration(2+r.IntN(40)) * time.Millisecond
	s.backoffMax = s.backoffMin + drawDur(r, s.ttl/10, s.ttl/3)
	s.rates = make([]float64, s.nodes)
	skew := r.IntN(2) == 0
	for i := range s.rates {
		s.rates[i] = 1
		if skew && s.class == safeSchedule {
			// Strictly less than the drift factor: 1/(1+e) > 1-f.
			s.rates[i] = 1 + (2*r.Float64()-1)*0.9*s.driftFactor
		}
	}
	s.faultGap = s.ttl / time.Duration(1+r.IntN(4))
	return s
}

func (s *schedule) String() string {
	fence := ""
	if s.fencing {
		fence = " fencing"
	}
	return fmt.Sprintf("seed %d (%s): %d nodes, %d clients %v, keys %v, %d ops each, TTL %v, node timeout %v, drift %v%s, backoff %v–%v, clock rates %.4f",
		s.seed, s.class, s.nodes, s.clients, s.actors, s.keys, s.ops, s.ttl, s.nodeTimeout, s.driftFactor, fence, s.backoffMin, s.backoffMax, s.rates)
}
