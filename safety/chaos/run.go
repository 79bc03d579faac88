package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// Run starts cfg.Nodes redis-server processes behind proxies, connects the
// contenders' clients (see warmUp), runs the contenders and the fault
// schedule for cfg.Duration (or until ctx ends), then
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
	cl, err := startCluster(ctx, cfg)
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
			c, err := redlock.Open(d, cl.addrs(),
				redlock.WithTTL(cfg.TTL),
				redlock.WithNodeTimeout(cfg.NodeTimeout),
				redlock.WithBackoff(redlock.ExponentialBackoff(time.Millisecond, cfg.NodeTimeout)))
			if err != nil {
				return Report{}, fmt.Errorf("chaos: open driver %q: %w", d, err)
			}
			contenders = append(contenders, contender{fmt.Sprintf("%s/%d", d, k), c})
		}
	}

	var warming sync.WaitGroup
	for _, c := range contenders {
		warming.Go(func() { warmUp(ctx, cfg, c.holder, c.client) })
	}
	warming.Wait()

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
	if cfg.Progress != nil {
		wg.Go(func() { reportProgress(runCtx, cfg, start, &st, sched) })
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

// reportProgress writes a line to cfg.Progress every cfg.ProgressEvery until
// ctx ends: how long the contenders have run, and the grants, faults and
// overlaps so far.
func reportProgress(ctx context.Context, cfg Config, start time.Time, st *stats, sched *scheduler) {
	t := time.NewTicker(cfg.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st.mu.Lock()
		grants := slices.Clone(st.grants)
		st.mu.Unlock()
		fmt.Fprintf(cfg.Progress, "chaos: %v of %v: %d grants, %d faults, %d overlaps so far\n",
			time.Since(start).Round(100*time.Millisecond), cfg.Duration, len(grants), sched.applied.Load(), len(Overlaps(grants)))
	}
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

// warmUpFor bounds a contender's warm-up (see warmUp).
const warmUpFor = 10 * time.Second

// warmUp connects c before the faults begin: it takes and releases a lock on
// a key of the holder's own (KEY/warm-up/HOLDER/TRY), trying again until that
// worked, for warmUpFor at most. A fresh client's first calls dial, which on
// a busy machine (a race-enabled build on two shared cores) takes longer
// than the node timeout: runs of 3s whose contenders spent them dialing,
// under faults, granted nothing, and checked nothing. A contender that could
// not warm up runs all the same.
func warmUp(ctx context.Context, cfg Config, holder string, c *redlock.Client) {
	ctx, cancel := context.WithTimeout(ctx, warmUpFor)
	defer cancel()
	for try := 0; ctx.Err() == nil; try++ {
		// A key per try: a failed release may leave one for its TTL.
		l, err := c.TryLock(ctx, cfg.Key+"/warm-up/"+holder+"/"+strconv.Itoa(try))
		if err != nil {
			sleep(ctx, cfg.NodeTimeout)
			continue
		}
		if l.Unlock(ctx) == nil {
			return
		}
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

// cluster is the nodes of a run: servers or Redis Clusters, and the proxies
// in front of them.
type cluster struct {
	nodes []*node
}

// node is one of a run's nodes: a server, or a Redis Cluster whose shards'
// primaries are servers, each behind its proxy.
type node struct {
	addr    string
	servers []*redistest.Server
	proxies []*faultproxy.Proxy
	rc      *redistest.Cluster // nil for a server
}

// addrs returns the nodes' addresses, through their proxies.
func (cl *cluster) addrs() []string {
	addrs := make([]string, len(cl.nodes))
	for i, n := range cl.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// startCluster starts the nodes of cfg in parallel, and a proxy in front of
// each server.
func startCluster(ctx context.Context, cfg Config) (*cluster, error) {
	cl := &cluster{nodes: make([]*node, cfg.Nodes)}
	errs := make([]error, cfg.Nodes)
	var wg sync.WaitGroup
	for i := range cfg.Nodes {
		cl.nodes[i] = &node{}
		wg.Go(func() {
			if i < cfg.ClusterNodes {
				errs[i] = cl.nodes[i].startCluster(ctx, cfg.ClusterShards)
				return
			}
			s, err := redistest.Start(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			n := cl.nodes[i]
			n.servers = []*redistest.Server{s}
			p, err := faultproxy.StartProxy(s.Addr())
			if err != nil {
				errs[i] = err
				return
			}
			n.proxies, n.addr = []*faultproxy.Proxy{p}, p.Addr()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cl.close()
		return nil, fmt.Errorf("chaos: start nodes: %w", err)
	}
	return cl, nil
}

// startCluster makes n a Redis Cluster of shards shards, a proxy in front of
// each primary, which the primary announces as its address.
func (n *node) startCluster(ctx context.Context, shards int) error {
	rc, err := redistest.StartCluster(ctx, shards)
	if err != nil {
		return err
	}
	n.rc = rc
	q := []string{"cluster=true"}
	for _, sh := range rc.Shards() {
		p, err := faultproxy.StartProxy(sh.Primary().Addr())
		if err != nil {
			return err
		}
		n.servers, n.proxies = append(n.servers, sh.Primary()), append(n.proxies, p)
		_, port, _ := net.SplitHostPort(p.Addr())
		pn, _ := strconv.Atoi(port)
		if err := rc.SetAnnouncePort(ctx, sh, pn); err != nil {
			return err
		}
		if len(n.proxies) > 1 {
			q = append(q, "addr="+p.Addr())
		}
	}
	n.addr = "redis://" + n.proxies[0].Addr() + "?" + strings.Join(q, "&")
	return nil
}

// close stops every proxy and server that was started.
func (cl *cluster) close() {
	for _, n := range cl.nodes {
		if n == nil {
			continue
		}
		for _, p := range n.proxies {
			p.Close()
		}
		if n.rc != nil {
			n.rc.Close()
			continue
		}
		for _, s := range n.servers {
			s.Close()
		}
	}
}
