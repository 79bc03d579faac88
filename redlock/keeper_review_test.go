package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// holdAll holds the keys k0 to k<locks-1> through c.Do at once, and returns
// once every fn holds its lock. end lets every fn return and gives the
// errors of the Do calls, in no order.
func holdAll(t *testing.T, c *redlock.Client, locks int) (end func() []error) {
	var (
		wg      sync.WaitGroup
		holding sync.WaitGroup
		release = make(chan struct{})
		errs    = make([]error, locks)
	)
	holding.Add(locks)
	for i := range locks {
		wg.Go(func() {
			errs[i] = c.Do(t.Context(), fmt.Sprintf("k%d", i), func(ctx context.Context) error {
				holding.Done()
				<-release
				return nil
			})
		})
	}
	holding.Wait()
	return func() []error {
		close(release)
		wg.Wait()
		return errs
	}
}

// failedDo counts the errors that are not nil.
func failedDo(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}

// extendFailures is a memory node that counts its Extend calls that failed.
type extendFailures struct {
	*memory.Node
	failed *atomic.Int64
}

func (n extendFailures) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := n.Node.Extend(ctx, key, value, ttl)
	if err != nil {
		n.failed.Add(1)
	}
	return ok, err
}

// A node that does not queue (driver.Queuer: rueidis, valkeygo, memory) gets
// the keeper's extensions from keeperFanout goroutines per node, the rest of
// the group waiting for them: a call that waited there must still have the
// whole node timeout on the network. Here 1,000 locks taken at one instant
// are extended as one group through nodes that answer every call in 50ms, a
// sixth of the node timeout: the group takes about 800ms per node, within
// the extension interval (1.3s), and no extension call may fail. With the
// node timeout counted from the group's start, the calls beyond the first
// 384 per node failed.
func TestReviewKeeperGroupCallsGetTheNodeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			locks   = 1000
			latency = 50 * time.Millisecond
			ttl     = 4 * time.Second
		)
		var failed atomic.Int64
		mem := make([]*memory.Node, 5)
		nodes := make([]driver.Node, len(mem))
		for i := range nodes {
			mem[i] = memory.New(memory.WithName(fmt.Sprintf("slow%d", i)))
			nodes[i] = extendFailures{mem[i], &failed}
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond))
		end := holdAll(t, c, locks) // all at one instant: their extensions are one group
		for _, m := range mem {
			m.SetLatency(latency)
		}
		time.Sleep(2 * ttl) // six extension periods
		for _, err := range end() {
			require.NoError(t, err)
		}
		require.Zero(t, failed.Load(), "extension calls failed on nodes that answer every call in %v, a sixth of the node timeout", latency)
	})
}

// Two of five nodes stalled while 1,000 locks are held through Do: the
// quorum of the three others keeps every lock. The keeper's group must not
// wait a node timeout for each keeperFanout calls to a stalled node: a lock
// whose extension still has calls out cannot have its validity raised past
// the earliest bound of those calls (Lock.Until), so a group held that long
// loses its locks.
func TestReviewKeeperStalledNodesKeepLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			locks = 1000
			ttl   = 2 * time.Second
		)
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond))
		end := holdAll(t, c, locks)
		mem[0].SetStalled(true)
		mem[1].SetStalled(true)
		time.Sleep(3 * ttl)
		mem[0].SetStalled(false)
		mem[1].SetStalled(false)
		require.Zero(t, failedDo(end()), "locks lost (or not released by a quorum) with three of five nodes answering")
	})
}

// closedNode is a memory node that counts the calls it gets after Close.
type closedNode struct {
	*memory.Node
	closed atomic.Bool
	late   *atomic.Int64
}

func (n *closedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.closed.Load() {
		n.late.Add(1)
		return false, driver.ErrClosed
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

func (n *closedNode) Close() error {
	n.closed.Store(true)
	return nil
}

// blockExtend is an observer whose Extend waits until it is let go, the
// first time: it holds the keeper between taking a group of due locks and
// sending their extensions.
type blockExtend struct {
	redlock.NopObserver
	once     sync.Once
	entered  chan struct{}
	letGo    chan struct{}
	finished atomic.Int64 // extensions reported done after letGo
}

func (o *blockExtend) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	o.once.Do(func() {
		close(o.entered)
		<-o.letGo
	})
	return ctx, func(redlock.ExtendDone) { o.finished.Add(1) }
}

// Close ends the keeper's work: no extension group of the keeper may go on
// sending calls to the nodes (or reporting to the observers) after Close has
// closed the nodes and returned. The keeper's group ran on the timer's
// goroutine, which Close did not wait for: a group taken from the heap just
// before Close sent its calls to closed nodes afterwards.
func TestReviewCloseWaitsForKeeperGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var late atomic.Int64
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = &closedNode{Node: memory.New(memory.WithName(fmt.Sprintf("n%d", i))), late: &late}
		}
		obs := &blockExtend{entered: make(chan struct{}), letGo: make(chan struct{})}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			done <- c.Do(t.Context(), "k", func(ctx context.Context) error {
				<-ctx.Done()
				return nil
			})
		}()
		<-obs.entered // the keeper took the lock's first extension
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		synctest.Wait()
		select {
		case err := <-closed:
			// Close returned while the keeper had a group: it must send
			// nothing now.
			require.NoError(t, err)
			close(obs.letGo)
		default:
			// Close waits for the group (bounded): let it finish.
			close(obs.letGo)
			require.NoError(t, <-closed)
		}
		require.ErrorIs(t, <-done, redlock.ErrLockLost)
		synctest.Wait()
		require.Zero(t, late.Load(), "extension calls sent to nodes after Close closed them")
	})
}

// Two of five nodes answer in 250ms, near the node timeout, the three
// others at once, while 3,000 locks taken at one instant are held: the
// quorum of the fast nodes decides each extension at once, and the keeper
// must not go on feeding the slow nodes the calls of extensions already
// decided: a lock's extension is in flight until its last node call
// returned, and one that stays in flight past the next extension keeps the
// lock's validity from rising (see Lock.Until), until the lock is lost.
func TestReviewKeeperSlowMinorityKeepsLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			locks = 3000
			ttl   = 3 * time.Second
		)
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithExtendInterval(time.Second))
		end := holdAll(t, c, locks) // all at one instant: their extensions are one group
		mem[3].SetLatency(250 * time.Millisecond)
		mem[4].SetLatency(250 * time.Millisecond)
		time.Sleep(3 * ttl)
		mem[3].SetLatency(0)
		mem[4].SetLatency(0)
		require.Zero(t, failedDo(end()), "locks lost (or not released by a quorum) with three of five nodes answering at once")
	})
}

// queuedNode is a memory node that says it queues (driver.Queuer), whose
// Extend calls of one key wait in its "queue" as long as their context
// allows, or until Close, as on a minority node saturated by that key's
// neighbours.
type queuedNode struct {
	*memory.Node
	stuck  string        // the key whose Extend calls wait
	closed chan struct{} // closed by Close
}

func newQueuedNode(name, stuck string) queuedNode {
	return queuedNode{Node: memory.New(memory.WithName(name)), stuck: stuck, closed: make(chan struct{})}
}

func (n queuedNode) Pending() driver.Pending { return driver.Pending{} }

func (n queuedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if key == n.stuck {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-n.closed:
			return false, driver.ErrClosed
		}
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

func (n queuedNode) Close() error {
	close(n.closed)
	return n.Node.Close()
}

// Two locks held through Do are extended in one group; the extension calls
// of one of them wait on two of the five nodes until their bound. The
// other lock's extensions all return at once: its validity must rise with
// each extension. With the group's calls counted as in flight for every
// lock of the group until its last call returned, the other lock's Until
// stayed at the bound of its first extension, and it was lost.
func TestReviewKeeperLockNotHeldBackByItsGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		nodes := make([]driver.Node, 5)
		for i := range nodes {
			stuck := ""
			if i >= 3 {
				stuck = "slow"
			}
			nodes[i] = newQueuedNode(fmt.Sprintf("q%d", i), stuck)
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithExtendInterval(time.Second))
		var (
			holding sync.WaitGroup
			release = make(chan struct{})
			errs    = make(chan error, 2)
		)
		holding.Add(2)
		for _, key := range []string{"a", "slow"} {
			go func() {
				err := c.Do(t.Context(), key, func(ctx context.Context) error {
					holding.Done()
					select {
					case <-release:
						return nil
					case <-ctx.Done():
						return fmt.Errorf("%s: %w", key, context.Cause(ctx))
					}
				})
				if key == "a" {
					errs <- err
				}
			}()
		}
		holding.Wait()
		time.Sleep(3 * ttl)
		close(release)
		require.NoError(t, <-errs, "the lock whose extensions all returned at once was lost")
	})
}

// slowSet is a memory node that queues (driver.Queuer) and whose SETs wait
// d in its queue before they are applied, as on a node saturated by an
// acquisition storm.
type slowSet struct {
	*memory.Node
	d time.Duration
}

func (n slowSet) Pending() driver.Pending { return driver.Pending{} }

func (n slowSet) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	select {
	case <-time.After(n.d):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// Do's fn must have its context canceled when the lock's validity ends
// without a successful extension, even when the acquisition took most of the
// TTL: the SETs waited 8s of the 10s TTL in the nodes' queues, so that the
// lock is granted with under 2s of validity left, less than the extension
// interval (3.3s). Do's first extension must come before the validity ends:
// scheduled an interval after the grant, it came 1.4s after the lock was
// over, and fn ran on that long without the lock.
func TestReviewDoAfterSlowAcquisitionExtendsInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = slowSet{memory.New(memory.WithName(fmt.Sprintf("s%d", i))), 8 * time.Second}
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl))
		start := time.Now()
		validityEnd := start.Add(ttl - driftOf(ttl))
		var (
			granted time.Time
			ended   time.Time
			cause   error
		)
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			granted = time.Now()
			select {
			case <-ctx.Done():
				ended, cause = time.Now(), context.Cause(ctx)
			case <-time.After(2 * ttl):
				ended = time.Now()
			}
			return nil
		})
		require.False(t, granted.IsZero(), "Do: %v", err)
		if cause != nil {
			// Lost: then no later than at the end of its validity.
			require.False(t, ended.After(validityEnd), "fn's context canceled at +%v, after the lock's validity ended at +%v (%v)", ended.Sub(start), validityEnd.Sub(start), cause)
			return
		}
		// Kept: extended before its validity ended, and held to the end.
		require.NoError(t, err)
		require.Equal(t, granted.Add(2*ttl), ended)
	})
}

// A lock whose extension calls wait on two of five nodes until their bound:
// its later extensions, of the same TTL, succeed on the three others and
// raise its validity, since a PEXPIRE of the same TTL that lands late can
// only lengthen the key. Do keeps the lock for as long as fn runs, and the
// three nodes keep the key all along. (Until 12-01 the extension still in
// flight capped the later ones, and Do lost the lock at its bound; a review
// lost 11-209 of 2,000 locks held through Do that way, with no node fault,
// under a load that made the extensions overlap.)
func TestDoKeptWhileItsExtensionCallsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl   = 3 * time.Second
			every = time.Second
		)
		nodes := make([]driver.Node, 5)
		var near []queuedNode
		for i := range nodes {
			stuck := ""
			if i >= 3 {
				stuck = "k"
			}
			n := newQueuedNode(fmt.Sprintf("q%d", i), stuck)
			nodes[i] = n
			if stuck == "" {
				near = append(near, n)
			}
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithExtendInterval(every))
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			for end := time.Now().Add(3 * ttl); time.Now().Before(end); {
				select {
				case <-ctx.Done():
					return fmt.Errorf("fn's context canceled: %w", context.Cause(ctx))
				case <-time.After(100 * time.Millisecond):
				}
				for _, n := range near {
					if left, held := n.PTTL("k"); !held || left <= 0 {
						return fmt.Errorf("node %s does not keep the key (PTTL %v)", n, left)
					}
				}
			}
			return nil
		})
		require.NoError(t, err, "a lock whose extensions succeed on three of five nodes, while their calls to the other two wait until their bound")
	})
}
