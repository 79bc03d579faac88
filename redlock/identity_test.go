package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// slow are options that give a first use time to connect, on a loaded
// machine: the identity check is bounded by the node timeout.
var slow = []redlock.Option{redlock.WithTTL(30 * time.Second), redlock.WithNodeTimeout(3 * time.Second)}

// Two addresses of one server, or of one cluster, pass New (which must not
// reach the network) but fail at first use: they would count twice.
func TestSameServerUnderTwoAddresses(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	_, port, _ := strings.Cut(servers[0].Addr(), ":")
	twice := []string{servers[0].Addr(), "localhost:" + port, servers[1].Addr()}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, twice, slow...)
			require.NoError(t, err)
			defer c.Close()
			err = duplicateFound(t, c, name+"/dup")
			require.Error(t, err)
			require.False(t, errors.Is(err, redlock.ErrNotObtained), "a configuration error, not a lost vote: %v", err)
			require.ErrorContains(t, err, "nodes 1 (")
			require.ErrorContains(t, err, "reach the same server")
			require.NotContains(t, err.Error(), redisaddr.ClusterSeedsHint, "one server, not a cluster")
			require.NotErrorIs(t, err, redisaddr.ErrSameCluster, "one server, not a cluster")
			require.ErrorIs(t, err, redlock.ErrSameServer)
			_, again := c.TryLock(t.Context(), "k")
			require.Equal(t, err, again, "the error stays")
			_, err = c.Lock(t.Context(), "k")
			require.ErrorIs(t, err, redlock.ErrSameServer, "Lock stops at once")
			err = c.Do(t.Context(), "k", func(context.Context) error { return nil })
			require.ErrorIs(t, err, redlock.ErrSameServer, "Do stops at once")

			ok, err := redlock.Open(name, redistest.Addrs(servers), slow...)
			require.NoError(t, err)
			defer ok.Close()
			l, err := ok.TryLock(t.Context(), "k")
			require.NoError(t, err, "distinct servers")
			require.NoError(t, l.Unlock(t.Context()))
		})
	}
}

// duplicateFound makes acquisitions with c, a Client given two addresses of
// one server, until one fails, and returns its error; each acquisition takes
// a key of its own (key/0, key/1...), so that none is refused for the SETs
// of an earlier one, late or being released. The first
// acquisition fails when both addresses answered its SETs. When one of them
// had not answered by the time a quorum of the others decided, it did not
// count towards that quorum, and the first acquisition waited for its
// identity only briefly (Client.checkAnswered): a cluster node's first call,
// which maps its slots, or a first connection to "localhost" can take
// longer on a loaded machine (the first TryLock was granted in 26 of 41
// runs of TestSameClusterUnderTwoSeeds, and its lock then held the key for
// the next subtests). The duplicate is found when that identity comes, and
// fails every acquisition from then on: the locks granted until then are
// released, and no more than a few may be.
func duplicateFound(t *testing.T, c *redlock.Client, key string) error {
	t.Helper()
	for i := range 50 {
		l, err := c.TryLock(t.Context(), fmt.Sprintf("%s/%d", key, i))
		if err != nil {
			return err
		}
		require.NoError(t, l.Unlock(t.Context()))
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("two addresses of one server granted 50 acquisitions: never found")
	return nil
}

func TestSameClusterUnderTwoSeeds(t *testing.T) {
	cl := redistest.NewCluster(t, 2)
	other := redistest.NewServer(t)
	for _, name := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			addrs := []string{cl.URL(), "redis://" + cl.Seeds()[1] + "?cluster=true", other.Addr()}
			c, err := redlock.Open(name, addrs, slow...)
			require.NoError(t, err)
			defer c.Close()
			err = duplicateFound(t, c, name+"/dup")
			require.ErrorContains(t, err, "reach the same server (node:")
			require.ErrorContains(t, err, "; "+redisaddr.ClusterSeedsHint) // how one cluster's seeds are given
			require.ErrorIs(t, err, redisaddr.ErrSameCluster, "the command's note follows the hint")
			require.ErrorIs(t, err, redlock.ErrSameServer)

			// A shard's primary given as a server beside its cluster.
			c2, err := redlock.Open(name, []string{cl.URL(), cl.Seeds()[0], other.Addr()}, slow...)
			require.NoError(t, err)
			defer c2.Close()
			err = duplicateFound(t, c2, name+"/dup2")
			require.ErrorContains(t, err, "reach the same server (node:")
			require.ErrorIs(t, err, redisaddr.ErrSameCluster)
			require.ErrorIs(t, err, redlock.ErrSameServer)

			// Distinct nodes, one of them a cluster, lock and unlock.
			c3, err := redlock.Open(name, []string{cl.URL(), other.Addr(), redistest.NewServer(t).Addr()}, slow...)
			require.NoError(t, err)
			defer c3.Close()
			l, err := c3.TryLock(t.Context(), "k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
		})
	}
}

// The first acquisition of a Client with a stalled minority costs what it
// costs on a healthy cluster, not a node timeout: it waits for the
// identities of the nodes that answered it, and for the others a moment
// only (as long as its SET round took, at least 10ms). A caller's deadline
// shorter than the node timeout gets the lock. Before, the first call
// waited for every node's identity, for the node timeout.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can pass the caller's 100 ms deadline before the SETs are in.
func TestFirstAcquisitionWithStalledMinority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 2 * time.Second
		for _, deadline := range []time.Duration{0, 100 * time.Millisecond} {
			ids := make([]*idNode, 5)
			nodes := make([]driver.Node, 5)
			for i := range ids {
				ids[i] = &idNode{Node: memory.New(), id: fmt.Sprint("server", i)}
				nodes[i] = ids[i]
			}
			for _, i := range []int{3, 4} {
				ids[i].blackholed = true
				ids[i].SetStalled(true)
			}
			c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(nodeTimeout))
			ctx := t.Context()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			start := time.Now()
			l, err := c.TryLock(ctx, "k")
			took := time.Since(start)
			require.NoError(t, err, "deadline %v", deadline)
			require.Less(t, took, nodeTimeout/2, "the first TryLock waited for the stalled nodes' identities")
			require.NoError(t, l.Unlock(t.Context()))
		}
	})
}

// Two nodes that tell one identity and both answer the first acquisition
// fail it, deterministically, and every later one; the lock is released.
// It runs in a bubble (testing/synctest): on the real clock a machine that
// stalled the test past the default 200ms node timeout failed the SETs
// before the identities were in ("1 of 3 nodes agreed ... context deadline
// exceeded", 1 run of 10 at nice 10 beside CPU hogs).
func TestFirstAcquisitionFindsDuplicateAmongAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := make([]*idNode, 3)
		nodes := make([]driver.Node, 3)
		mem := make([]*memory.Node, 3)
		for i := range ids {
			mem[i] = memory.New()
			ids[i] = &idNode{Node: mem[i], id: fmt.Sprint("server", i)}
			nodes[i] = ids[i]
		}
		ids[2].id = "server0"
		c := newClient(t, nodes)
		_, err := c.TryLock(t.Context(), "k")
		require.ErrorContains(t, err, "reach the same server (server0)")
		require.ErrorContains(t, err, "nodes 1 (")
		require.False(t, errors.Is(err, redlock.ErrNotObtained), "a configuration error: %v", err)
		synctest.Wait()
		require.Zero(t, holders(mem, "k"), "released")
		_, again := c.TryLock(t.Context(), "k")
		require.Equal(t, err, again, "the error stays")
	})
}

// idNodes returns n memory nodes that tell the identities server0, server1,
// ...
func idNodes(n int) ([]*idNode, []*memory.Node, []driver.Node) {
	ids := make([]*idNode, n)
	mem := make([]*memory.Node, n)
	nodes := make([]driver.Node, n)
	for i := range ids {
		mem[i] = memory.New()
		ids[i] = &idNode{Node: mem[i], id: fmt.Sprint("server", i)}
		nodes[i] = ids[i]
	}
	return ids, mem, nodes
}

// When the context ends while the first acquisition waits for the identity
// of a node that granted it, the lock is released and the error says so
// once, with the votes and the context's error.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can pass the 300 ms deadline before the SETs are in.
func TestFirstAcquisitionContextEndsInIdentityWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, mem, nodes := idNodes(3)
		ids[2].blackholed = true // its SET answers, its Identity does not
		// With node 0 down, the grant waits for node 2's SET: a node that
		// granted it. (Had the quorum come from nodes 0 and 1 first, node
		// 2 would be a node that had not answered, waited for briefly.)
		mem[0].SetDown(true)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(3*time.Second))
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		l, err := c.TryLock(ctx, "k")
		require.Nil(t, l)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "while the nodes told their identities")
		require.Equal(t, 1, strings.Count(err.Error(), "context deadline exceeded"), "ctx.Err joined twice: %v", err)
		synctest.Wait()
		require.Zero(t, holders(mem, "k"), "released")
	})
}

// After the first round of questions, a node whose SETs answer but whose
// Identity does not is asked again every second in the background: no
// acquisition waits for it (each did, for the node timeout, when later
// rounds were waited for too).
// It runs in a bubble (testing/synctest): each acquisition's time is then
// the waits it made, not a loaded machine's delays.
func TestLaterIdentityRoundsHoldNothingUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, _, nodes := idNodes(3)
		ids[2].blackholed = true
		const nodeTimeout = time.Second
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(nodeTimeout))
		l, err := c.TryLock(t.Context(), "first")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		// The first round of questions ends when the silent node's times
		// out. Until then an acquisition that the node answered waits for
		// it (checkAnswered), and "first" does only when the node's SET
		// answered before the quorum was in.
		time.Sleep(nodeTimeout)
		synctest.Wait()
		for i := 0; i < 30; i++ { // 3s: three rounds of questions at least
			start := time.Now()
			l, err := c.TryLock(t.Context(), fmt.Sprint("k", i))
			took := time.Since(start)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			require.Less(t, took, nodeTimeout/2, "acquisition %d waited for a later round's question", i)
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// slowIDNode tells its identity after a delay (on the bubble's clock).
type slowIDNode struct {
	*memory.Node
	id    string
	delay time.Duration
}

func (n *slowIDNode) Identity(ctx context.Context) ([]string, error) {
	select {
	case <-time.After(n.delay):
		return []string{n.id}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The first acquisition waits identityGrace (10 ms) at least for the
// identities of the nodes that had not answered it, also when its round took
// no time on the Client's clock (a fake one, as in a bubble): node 2 is node
// 0's server under another address, its SET answers after 5 ms and its
// identity after 2 ms, so the duplicate is found and the acquisition fails.
// Before, a round of zero duration meant no grace at all: the lock was
// granted with one server counted twice.
func TestFirstAcquisitionGraceWhenRoundTookNoTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = &slowIDNode{Node: memory.New(), id: fmt.Sprint("server", i)}
		}
		dup := nodes[2].(*slowIDNode)
		dup.id, dup.delay = "server0", 2*time.Millisecond
		dup.SetLatency(5 * time.Millisecond)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.Nil(t, l)
		require.ErrorContains(t, err, "reach the same server (server0)")
	})
}

// errNoInfo is the refusal of INFO to an ACL user without +info.
var errNoInfo = errors.New("NOPERM this user has no permissions to run the 'info' command")

// noInfoNode is a node whose identity question is refused.
type noInfoNode struct{ *memory.Node }

func (noInfoNode) Identity(context.Context) ([]string, error) { return nil, errNoInfo }

// identityCalls records the NodeCalls of OpIdentity.
type identityCalls struct {
	redlock.NopObserver
	mu    sync.Mutex
	calls []redlock.NodeCall
}

func (o *identityCalls) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation == redlock.OpIdentity {
		o.mu.Lock()
		o.calls = append(o.calls, e)
		o.mu.Unlock()
	}
}

// A node whose identity question fails is taken as distinct, so one server
// under two addresses would count twice towards the quorum, unseen: the
// observers hear of each such failure (OpIdentity, Key ""), before the
// first acquisition returns. Before, nothing told them, nor a logger.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the TryLock.
func TestIdentityFailureObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := []driver.Node{noInfoNode{memory.New()}, noInfoNode{memory.New()}, noInfoNode{memory.New()}}
		rec := &identityCalls{}
		c, err := redlock.New(nodes, redlock.WithObserver(rec))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err, "a node whose identity is unknown is taken as distinct")
		defer l.Unlock(context.WithoutCancel(t.Context()))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		require.Len(t, rec.calls, len(nodes), "one failed identity question per node, reported before TryLock returned")
		seen := map[string]bool{}
		for _, e := range rec.calls {
			require.Empty(t, e.Key)
			require.False(t, e.OK)
			require.ErrorIs(t, e.Err, errNoInfo)
			seen[e.Node] = true
		}
		require.Len(t, seen, len(nodes), "each node once")
	})
}

// slowNoInfoNode refuses its identity question, as noInfoNode does, after a
// delay (on the bubble's clock).
type slowNoInfoNode struct {
	*memory.Node
	delay time.Duration
}

func (n *slowNoInfoNode) Identity(ctx context.Context) ([]string, error) {
	select {
	case <-time.After(n.delay):
		return nil, errNoInfo
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close waits, for at most the node timeout, for the identity questions in
// flight, as for the node calls: a node whose SET answers after the quorum
// and the first acquisition's grace, and whose question is refused later,
// within the node timeout, is heard of by the observers before Close
// returns, though the lock was released at once (the redlock command's
// `run -- true`, which says it on stderr from that NodeCall). A question
// that does not answer ends by the node timeout, from its start, and Close
// waits no longer for it.
// It runs in a bubble (testing/synctest): the nodes' delays are then exact,
// not a loaded machine's.
func TestCloseWaitsForIdentityQuestionsInFlight(t *testing.T) {
	const nodeTimeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name  string
		delay time.Duration // of node 2's refusal
		heard int           // refusals heard when Close returns
	}{
		{"refused within the node timeout", nodeTimeout * 3 / 4, 3},
		{"no answer", time.Hour, 3}, // its question's end by the node timeout
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				late := &slowNoInfoNode{Node: memory.New(), delay: tc.delay}
				late.SetLatency(nodeTimeout / 4) // past the first acquisition's grace (10ms)
				nodes := []driver.Node{noInfoNode{memory.New()}, noInfoNode{memory.New()}, late}
				rec := &identityCalls{}
				c, err := redlock.New(nodes, redlock.WithObserver(rec), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(nodeTimeout))
				require.NoError(t, err)
				began := time.Now()
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				require.NoError(t, l.Unlock(t.Context()))
				rec.mu.Lock()
				before := len(rec.calls)
				rec.mu.Unlock()
				require.Equal(t, 2, before, "the late node's question was answered before Close: the test does not test Close")
				require.NoError(t, c.Close())
				took := time.Since(began)
				rec.mu.Lock()
				defer rec.mu.Unlock()
				require.Len(t, rec.calls, tc.heard, "identity questions heard of when Close returned")
				last := rec.calls[len(rec.calls)-1]
				if tc.delay < nodeTimeout {
					require.ErrorIs(t, last.Err, errNoInfo, "the late node's refusal")
				} else {
					require.ErrorIs(t, last.Err, context.DeadlineExceeded, "the late node's question, ended by the node timeout")
				}
				require.LessOrEqual(t, took, 2*nodeTimeout, "Close waited past the questions' node timeout")
			})
		})
	}
}
