package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// scheduler applies random faults to random nodes, to no more than a
// minority at once, each for a random time.
type scheduler struct {
	cfg    Config
	cl     *cluster
	rng    *rand.Rand // used by run's goroutine only
	order  []Fault    // the current cycle through cfg.Faults
	counts map[Fault]int
	// applied counts the faults applied so far, for the progress lines,
	// which read it while run's goroutine writes counts.
	applied atomic.Int64

	mu     sync.Mutex
	faulty []bool // per node: a fault is applied or being healed
	errs   []error
}

func newScheduler(cfg Config, cl *cluster, counts map[Fault]int) *scheduler {
	return &scheduler{
		cfg:    cfg,
		cl:     cl,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0)),
		counts: counts,
		faulty: make([]bool, cfg.Nodes),
	}
}

// run starts faults until ctx ends, then waits until every fault is healed.
func (s *scheduler) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if len(s.cfg.Faults) == 0 {
		return
	}
	minority := (s.cfg.Nodes - 1) / 2
	for {
		// Exponential gaps: faults start at random, sometimes together.
		gap := time.Duration(s.rng.ExpFloat64() * float64(s.cfg.FaultEvery))
		sleep(ctx, min(gap, 10*s.cfg.FaultEvery))
		if ctx.Err() != nil {
			return
		}
		node, ok := s.pick(minority)
		if !ok {
			continue
		}
		kind := s.next()
		s.counts[kind]++
		s.applied.Add(1)
		// Parameters are drawn here, on run's goroutine, which owns rng.
		d := randDuration(s.rng, s.cfg.FaultFor/10, s.cfg.FaultFor)
		lat := [2]time.Duration{
			randDuration(s.rng, time.Millisecond, 2*s.cfg.NodeTimeout),
			randDuration(s.rng, time.Millisecond, 2*s.cfg.NodeTimeout),
		}
		down := s.cfg.TTL + d // longer than any key the crash makes it forget
		wg.Go(func() {
			defer s.free(node)
			if err := s.apply(ctx, node, kind, d, lat, down); err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
			}
		})
	}
}

// pick marks and returns a random healthy node, unless max nodes are already
// faulty.
func (s *scheduler) pick(max int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var healthy []int
	for i, f := range s.faulty {
		if !f {
			healthy = append(healthy, i)
		}
	}
	if len(s.faulty)-len(healthy) >= max || len(healthy) == 0 {
		return 0, false
	}
	node := healthy[s.rng.IntN(len(healthy))]
	s.faulty[node] = true
	return node, true
}

func (s *scheduler) free(node int) {
	s.mu.Lock()
	s.faulty[node] = false
	s.mu.Unlock()
}

// next returns the next fault of a cycle through cfg.Faults in random order.
func (s *scheduler) next() Fault {
	if len(s.order) == 0 {
		s.order = append([]Fault(nil), s.cfg.Faults...)
		s.rng.Shuffle(len(s.order), func(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] })
	}
	f := s.order[0]
	s.order = s.order[1:]
	return f
}

// apply applies one fault to node for d (a killed node: down for down), then
// heals it; when ctx ends it heals at once, except that a killed node then
// stays down.
func (s *scheduler) apply(ctx context.Context, node int, kind Fault, d time.Duration, lat [2]time.Duration, down time.Duration) error {
	n := s.cl.nodes[node]
	s.logf("node %d: %s for %v", node, kind, d)
	defer s.logf("node %d: %s healed", node, kind)
	// each applies f to every server of the node (a cluster's every shard)
	// at once.
	each := func(f func(i int) error) error {
		errs := make([]error, len(n.servers))
		var wg sync.WaitGroup
		for i := range n.servers {
			wg.Go(func() { errs[i] = f(i) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	var err error
	hold := func(heal func(i int) error) {
		if err == nil {
			sleep(ctx, d)
		}
		if herr := each(heal); herr != nil && err == nil {
			err = herr
		}
	}
	switch kind {
	case Pause:
		err = each(func(i int) error { return n.servers[i].Pause() })
		hold(func(i int) error { return n.servers[i].Resume() })
	case Cut:
		err = each(func(i int) error { return n.proxies[i].Cut() })
		hold(func(i int) error { return n.proxies[i].Heal() })
	case Blackhole:
		err = each(func(i int) error { return n.proxies[i].Blackhole() })
		hold(func(i int) error { return n.proxies[i].Heal() })
	case LoseReplies:
		err = each(func(i int) error { return n.proxies[i].LoseReplies() })
		hold(func(i int) error { return n.proxies[i].Heal() })
	case Latency:
		s.logf("node %d: latency %v to the server, %v back", node, lat[0], lat[1])
		err = each(func(i int) error { return n.proxies[i].SetLatency(lat[0], lat[1]) })
		hold(func(i int) error { return n.proxies[i].Heal() })
	case KillRestart:
		s.logf("node %d: down for %v", node, down)
		err = each(func(i int) error { return n.servers[i].RestartAfter(ctx, down) })
		if ctx.Err() != nil {
			err = nil // the run ended: the node stays down
		}
	}
	if err != nil {
		return fmt.Errorf("chaos: node %d: %s: %w", node, kind, err)
	}
	return nil
}

func (s *scheduler) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}
