package rueidiscoretest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rueidiscore"
	"github.com/go-redlock/redlock/redistest"
)

// laneDeadline is the deadline of the calls that may take a node's lane:
// within batch.CancelLag.
const laneDeadline = batch.CancelLag - 20*time.Millisecond

// slack is how long a call may take beyond its deadline in these tests:
// generous, since the machines that run them are slow and shared.
const slack = 2 * time.Second

// holdProxy forwards the connections it accepts to a target, numbered from 0
// in the order they were accepted, and can hold the replies of one of them.
// It reports each command a connection forwards to the target.
type holdProxy struct {
	l      net.Listener
	target string
	sent   chan int // receives a connection's number when it forwards bytes to the target, if not full
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
	held  map[int]*hold // by connection
}

// A hold holds a connection's replies until released.
type hold struct {
	c    chan struct{} // closed when the replies may pass
	once sync.Once
}

func (h *hold) release() { h.once.Do(func() { close(h.c) }) }

// startHoldProxy forwards to target until the test ends.
func startHoldProxy(t *testing.T, target string) *holdProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &holdProxy{l: l, target: target, sent: make(chan int, 1024), held: make(map[int]*hold)}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *holdProxy) addr() string { return p.l.Addr().String() }

func (p *holdProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		i := len(p.conns) / 2
		p.conns = append(p.conns, c, d)
		p.mu.Unlock()
		p.wg.Go(func() {
			defer d.Close()
			buf := make([]byte, 32<<10)
			for {
				k, err := c.Read(buf)
				if k > 0 {
					select {
					case p.sent <- i:
					default:
					}
					if _, err := d.Write(buf[:k]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
		p.wg.Go(func() {
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				k, err := d.Read(buf)
				if k > 0 {
					p.mu.Lock()
					h := p.held[i]
					p.mu.Unlock()
					if h != nil {
						<-h.c
					}
					if _, err := c.Write(buf[:k]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}

// count returns the number of connections accepted so far.
func (p *holdProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// hold holds the replies of connection i until the returned function is
// called, or the proxy closed.
func (p *holdProxy) hold(i int) (release func()) {
	h := &hold{c: make(chan struct{})}
	p.mu.Lock()
	p.held[i] = h
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.held, i)
		p.mu.Unlock()
		h.release()
	}
}

func (p *holdProxy) close() {
	p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	for _, h := range p.held {
		h.release()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// seen returns the connections that forwarded bytes since it was last
// called.
func (p *holdProxy) seen() map[int]bool {
	m := make(map[int]bool)
	for {
		select {
		case i := <-p.sent:
			m[i] = true
		default:
			return m
		}
	}
}

// until calls f until it returns true, for at most 5s; f's error fails the
// test at once.
func until(t *testing.T, f func() (bool, error), what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := f()
		require.NoError(t, err, what)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onLane reports whether a call due within batch.CancelLag goes on a lane:
// a connection of p other than 0, the pipelining client's.
func onLane(t *testing.T, p *holdProxy, n driver.Node) (bool, error) {
	p.seen()
	if err := setNX(t, n, laneDeadline); err != nil {
		return false, err
	}
	seen := p.seen()
	return len(seen) == 1 && !seen[0], nil
}

// setNX calls n.SetNX on a fresh key with a context due in d.
func setNX(t *testing.T, n driver.Node, d time.Duration) error {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	_, err := n.SetNX(ctx, key(), "v", time.Minute)
	return err
}

var keys struct {
	mu sync.Mutex
	n  int
}

// key returns a key not used before in the process.
func key() string {
	keys.mu.Lock()
	defer keys.mu.Unlock()
	keys.n++
	return "lane:" + strconv.Itoa(keys.n)
}

// withLane opens a node through a holdProxy and makes lone calls due within
// batch.CancelLag until one goes on the lane it made: the proxy's connection
// 1 (0 is the pipelining client's; a lane made again is a later one).
func withLane(t *testing.T, tg target) (*redistest.Server, *holdProxy, driver.Node) {
	t.Helper()
	srv := redistest.NewServer(t)
	p := startHoldProxy(t, srv.Addr())
	n := tg.open(t, p.addr())
	until(t, func() (bool, error) { return onLane(t, p, n) },
		"a node whose lone calls are due within batch.CancelLag makes a lane, a second connection, and sends them on it")
	return srv, p, n
}

// Lone calls due within batch.CancelLag make the node open its lane, a second
// connection, and go on it; calls due later never do.
func laneLoneCalls(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	p := startHoldProxy(t, srv.Addr())
	n := tg.open(t, p.addr())
	for range 20 {
		require.NoError(t, setNX(t, n, time.Second))
	}
	require.Equal(t, 1, p.count(), "calls due later than batch.CancelLag make no lane: one connection")
	until(t, func() (bool, error) { return onLane(t, p, n) },
		"a node whose lone calls are due within batch.CancelLag makes a lane, a second connection, and sends them on it")
	for range 20 {
		ok, err := onLane(t, p, n)
		require.NoError(t, err)
		require.True(t, ok, "a lone call goes on the lane")
	}
	p.seen()
	require.NoError(t, setNX(t, n, time.Second))
	require.Equal(t, map[int]bool{0: true}, p.seen(), "a call due later goes through the pipelining client (connection 0)")
	require.Equal(t, 2, p.count(), "no other connection")
}

// A call never waits behind the reply of a call on the lane: one made while
// the lane waits goes through the pipelining client and returns first. The
// call on the lane returns by its deadline, which no other call shares, and
// the node works on; Close ends everything.
func laneNeverQueues(t *testing.T, tg target) {
	_, p, n := withLane(t, tg)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p.seen()
	release := p.hold(1) // the lane's replies wait
	defer release()
	type result struct {
		err  error
		took time.Duration
	}
	first := make(chan result, 1)
	go func() {
		start := time.Now()
		err := setNX(t, n, laneDeadline)
		first <- result{err, time.Since(start)}
	}()
	require.Equal(t, 1, <-p.sent, "the first call goes on the lane")
	require.NoError(t, setNX(t, n, laneDeadline), "a call made while the lane waits for its reply")
	select {
	case r := <-first:
		t.Fatalf("the call on the lane returned (%v, after %v) before the second call: the second waited behind it", r.err, r.took)
	default:
	}
	r := <-first
	require.ErrorIs(t, r.err, context.DeadlineExceeded, "a call on the lane whose reply does not come ends at its deadline")
	require.Less(t, r.took, laneDeadline+slack)
	release()
	until(t, func() (bool, error) { return onLane(t, p, n) }, "the node works on, with a new lane, after a call on its lane timed out")
	require.NoError(t, n.Close())
}

// A call on the lane whose context is canceled returns by its deadline (at
// most batch.CancelLag after the cancellation), with the cancellation in its
// error; once the server answers again, so does the node.
//
// The context is canceled once the proxy forwarded the call, not after a
// fixed 50ms: on a loaded machine the cancellation came before the call was
// sent, which then returned context.Canceled without sending anything: the
// test failed ("the call went on the lane": nothing was forwarded) and
// proved nothing of a canceled call on the lane. The call must still be sent
// within laneDeadline, the most a call on the lane may have.
func laneCanceled(t *testing.T, tg target) {
	srv, p, n := withLane(t, tg)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	ctx, cancel := context.WithTimeout(t.Context(), laneDeadline)
	defer cancel()
	p.seen()
	sentOn := make(chan map[int]bool, 1)
	go func() {
		seen := make(map[int]bool)
		defer func() { sentOn <- seen }()
		select {
		case i := <-p.sent: // forwarded: the call was sent
			seen[i] = true
			cancel()
		case <-ctx.Done(): // not sent by its deadline
		}
	}()
	start := time.Now()
	_, err := n.SetNX(ctx, key(), "v", time.Minute)
	seen := <-sentOn
	for i := range p.seen() {
		seen[i] = true
	}
	require.Equal(t, map[int]bool{1: true}, seen, "the call went on the lane")
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), laneDeadline+slack)
	require.NoError(t, srv.Resume())
	until(t, func() (bool, error) { return onLane(t, p, n) }, "the node works again, with a new lane, once the server does")
}

// A lane whose connection the server closed while it was idle is not used:
// the next call succeeds, and the node makes a new lane.
func laneClosedIdle(t *testing.T, tg target) {
	srv, p, n := withLane(t, tg)
	ctx := testContext(t, 5*time.Second)
	v, err := srv.Do(ctx, "CLIENT", "LIST")
	require.NoError(t, err)
	newest := -1
	for _, line := range strings.Split(strings.TrimSpace(v.(string)), "\n") {
		if !strings.Contains(line, "cmd=client|list") {
			id, err := strconv.Atoi(strings.TrimPrefix(strings.Fields(line)[0], "id="))
			require.NoError(t, err, line)
			newest = max(newest, id)
		}
	}
	_, err = srv.Do(ctx, "CLIENT", "KILL", "ID", fmt.Sprint(newest)) // the lane's: made last
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // idle long enough for a check (laneIdle)
	require.NoError(t, setNX(t, n, laneDeadline), "the first call after the server closed the idle lane")
	until(t, func() (bool, error) { return p.count() == 3, setNX(t, n, laneDeadline) }, "a new lane is made")
}

// A node holds the commands beyond rueidiscore.MaxInFlight in a queue
// (driver.Queuer), and a command's network timeout (driver.WithNetworkTimeout) starts when it
// leaves the queue: one that waited longer than it still succeeds.
func queueTimeoutStartsAtSend(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	n := tg.open(t, srv.Addr())
	require.NoError(t, setNX(t, n, 5*time.Second))
	q, ok := n.(driver.Queuer)
	require.True(t, ok, "the node is a driver.Queuer")
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	ctx := testContext(t, 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, rueidiscore.MaxInFlight+2)
	for range rueidiscore.MaxInFlight + 1 {
		wg.Go(func() {
			_, err := n.SetNX(driver.WithNetworkTimeout(ctx, 20*time.Second), key(), "v", time.Minute)
			errs <- err
		})
	}
	require.Eventually(t, func() bool { return q.Pending().Depth == 1 }, 5*time.Second, time.Millisecond,
		"with %d commands in flight the next one waits", rueidiscore.MaxInFlight)
	const timeout = 400 * time.Millisecond // later than batch.CancelLag: no lane
	wg.Go(func() {
		_, err := n.SetNX(driver.WithNetworkTimeout(ctx, timeout), key(), "v", time.Minute)
		if err != nil {
			err = fmt.Errorf("the command that waited in the queue: %w", err)
		}
		errs <- err
	})
	require.Eventually(t, func() bool { return q.Pending().Depth == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * timeout)
	require.GreaterOrEqual(t, q.Pending().Oldest, 2*timeout, "Pending().Oldest")
	require.NoError(t, srv.Resume())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "no command fails for the time it waited in the queue")
	}
	require.Equal(t, driver.Pending{}, q.Pending())
}
