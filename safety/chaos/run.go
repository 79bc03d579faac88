package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// Run starts cfg.Nodes redis-server processes behind proxies, runs the
// contenders and the fault schedule for cfg.Duration (or until ctx ends), then
// stops everything it started and returns the Report. When it cannot start
// (a bad Config, an unknown driver, redis-server missing: the error then
// wraps redistest.ErrNotInstalled) it returns a zero Report and the error.
// When the harness failed to apply or heal a fault, it returns the full
// Report and that error. Overlapping grants are not an error: they are the
// Report's finding (see Report.Safe).
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, err
	}
	for _, d := range cfg.Drivers {
		if !slices.Contains(redlock.Drivers(), d) {
			return Report{}, fmt.Errorf("chaos: unknown driver %q (forgotten import?); registered: %v", d, redlock.Drivers())
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() | 1
	}
	cl, err := startCluster(ctx, cfg.Nodes)
	if err != nil {
		return Report{}, err
	}
	defer cl.close()

	type contender struct {
		holder string
		client *redlock.Client
	}
	var contenders []contender
	defer func() {
		for _, c := range contenders {
			c.client.Close()
		}
	}()
	for _, d := range cfg.Drivers {
		for k := 1; k <= cfg.Contenders; k++ {
			c, err := redlock.Open(d, redistest.Addrs(cl.proxies),
				redlock.WithTTL(cfg.TTL),
				redlock.WithNodeTimeout(cfg.NodeTimeout),
				redlock.WithBackoff(redlock.ExponentialBackoff(time.Millisecond, cfg.NodeTimeout)))
			if err != nil {
				return Report{}, fmt.Errorf("chaos: open driver %q: %w", d, err)
			}
			contenders = append(contenders, contender{fmt.Sprintf("%s/%d", d, k), c})
		}
	}

	rep := Report{Config: cfg, Faults: make(map[Fault]int)}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	sched := newScheduler(cfg, cl, rep.Faults)
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		sched.run(runCtx)
	}()
	var (
		wg sync.WaitGroup
		st stats
	)
	for i, c := range contenders {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1))
		wg.Go(func() { contend(runCtx, cfg, c.holder, c.client, rng, &st) })
	}
	wg.Wait()
	<-schedDone // every fault healed and every killed node back (or down for good if ctx ended)
	rep.Elapsed = time.Since(start)

	rep.Grants = st.grants
	rep.Refused, rep.Extended, rep.ExtendLost, rep.UnlockLost = st.refused, st.extended, st.extendLost, st.unlockLost
	rep.Unexpected, rep.UnexpectedCount = st.unexpected, st.unexpectedCount
	rep.Overlaps = Overlaps(rep.Grants)
	return rep, errors.Join(sched.errs...)
}

// stats collects what the contenders saw.
type stats struct {
	mu              sync.Mutex
	grants          []Grant
	refused         int
	extended        int
	extendLost      int
	unlockLost      int
	unexpected      []string // the first few
	unexpectedCount int
}

// maxUnexpected bounds the unexpected errors a Report keeps.
const maxUnexpected = 10

func (s *stats) update(f func(s *stats)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// check records err: it counts one under counter if it matches sentinel, and
// as unexpected otherwise.
func (s *stats) check(op string, err, sentinel error, counter *int) {
	s.update(func(s *stats) {
		if errors.Is(err, sentinel) {
			*counter++
			return
		}
		s.unexpectedCount++
		if len(s.unexpected) < maxUnexpected {
			s.unexpected = append(s.unexpected, op+": "+err.Error())
		}
	})
}

// contend acquires and releases the lock until ctx ends, recording each grant.
func contend(ctx context.Context, cfg Config, holder string, c *redlock.Client, rng *rand.Rand, st *stats) {
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 4*cfg.TTL)
		l, err := c.Lock(lctx, cfg.Key)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				st.check("Lock", err, redlock.ErrNotObtained, &st.refused)
			}
			continue
		}
		start, until := time.Now(), l.Until()
		sleep(ctx, randDuration(rng, 0, cfg.Hold))
		if rng.IntN(3) == 0 && time.Now().Before(until) {
			ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.TTL)
			err := l.Extend(ectx, cfg.TTL)
			cancel()
			if err == nil {
				st.update(func(s *stats) { s.extended++ })
				if returned := time.Now(); !returned.Before(until) {
					// The right to act lapsed before the extension was
					// confirmed: two grants, with a gap between them.
					st.update(func(s *stats) { s.grants = append(s.grants, Grant{holder, start, until}) })
					start = returned
				}
				until = l.Until()
				sleep(ctx, randDuration(rng, 0, cfg.Hold))
			} else {
				st.check("Extend", err, redlock.ErrLockLost, &st.extendLost)
			}
		}
		end := earlier(until, time.Now())
		st.update(func(s *stats) { s.grants = append(s.grants, Grant{holder, start, end}) })
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.TTL)
		if err := l.Unlock(uctx); err != nil {
			st.check("Unlock", err, redlock.ErrLockLost, &st.unlockLost)
		}
		cancel()
	}
}

// randDuration returns a random duration in [lo, hi].
func randDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// cluster is the nodes of a run: servers and the proxies in front of them.
type cluster struct {
	servers []*redistest.Server
	proxies []*faultproxy.Proxy
}

// startCluster starts n servers in parallel, and a proxy in front of each.
func startCluster(ctx context.Context, n int) (*cluster, error) {
	cl := &cluster{servers: make([]*redistest.Server, n), proxies: make([]*faultproxy.Proxy, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := redistest.Start(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			cl.servers[i] = s
			cl.proxies[i], errs[i] = faultproxy.StartProxy(s.Addr())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cl.close()
		return nil, fmt.Errorf("chaos: start nodes: %w", err)
	}
	return cl, nil
}

// close stops every proxy and server that was started.
func (cl *cluster) close() {
	for _, p := range cl.proxies {
		if p != nil {
			p.Close()
		}
	}
	for _, s := range cl.servers {
		if s != nil {
			s.Close()
		}
	}
}
