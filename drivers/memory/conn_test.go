package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A Conn is another connection to its Node's store: it sees the same keys,
// counters, subscribers and the store's faults, and its Close is its own.
func TestConnSharesStoreNotClose(t *testing.T) {
	ctx := context.Background()
	a := memory.New()
	defer a.Close()
	b := a.Conn()
	if b.String() != a.String() {
		t.Errorf("Conn().String() = %q, want its store's name %q", b.String(), a.String())
	}
	if ok, err := a.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
	}
	if ok, err := b.SetNX(ctx, "k", "w", time.Minute); ok || err != nil {
		t.Errorf("Conn's SetNX of a key set through its Node = %v, %v; want false, nil: a Conn shares the keys", ok, err)
	}
	notify := make(chan struct{}, 1)
	cancel, err := a.Subscribe(ctx, "k", notify)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if ok, err := b.ReleaseNotify(ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("Conn's ReleaseNotify = %v, %v; want true, nil", ok, err)
	}
	select {
	case <-notify:
	default:
		t.Error("a release through a Conn did not notify a subscriber of its Node")
	}
	b.SetDown(true)
	if _, err := a.SetNX(ctx, "k", "v", time.Minute); !errors.Is(err, memory.ErrDown) {
		t.Errorf("SetNX with the Conn's store down = %v, want ErrDown: fault controls act on the store", err)
	}
	b.SetDown(false)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetNX(ctx, "j", "v", time.Minute); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("SetNX on a closed Conn = %v, want ErrClosed", err)
	}
	if ok, err := a.SetNX(ctx, "j", "v", time.Minute); !ok || err != nil {
		t.Errorf("SetNX after its Conn was closed = %v, %v; want true, nil: closing a Conn leaves its Node open", ok, err)
	}
	var zero memory.Node
	if ok, err := zero.Conn().SetNX(ctx, "k", "v", time.Minute); !ok || err != nil || !zero.Holds("k") {
		t.Errorf("a zero Node's Conn: SetNX = %v, %v, Holds = %v; want a Conn on the zero Node's own store", ok, err, zero.Holds("k"))
	}
}

// Two Clients over Conns of the same nodes contend as two processes do, and
// each one's Close leaves the other working. Unlike nodes opened by address,
// the nodes are the test's: every run (-count) starts with no keys, so
// a lock the test leaves held does not fail its next run.
func TestConnClientsContend(t *testing.T) {
	for run := range 2 {
		ctx := context.Background()
		nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
		us, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
		if err != nil {
			t.Fatal(err)
		}
		other, err := redlock.New([]driver.Node{nodes[0].Conn(), nodes[1].Conn(), nodes[2].Conn()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.TryLock(ctx, "k"); err != nil {
			t.Fatalf("run %d: the other Client's TryLock = %v, want the lock", run, err)
		}
		if _, err := us.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) || errors.Is(err, redlock.ErrUnavailable) {
			t.Errorf("run %d: TryLock of a key the other Client holds = %v, want ErrNotObtained (refused, not unavailable)", run, err)
		}
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := us.TryLock(ctx, "j"); err != nil {
			t.Errorf("run %d: TryLock after the other Client closed = %v, want the lock: its Close closes only its Conns", run, err)
		}
		if err := us.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A Conn's own faults cut that connection only: the store keeps its keys and
// other connections still reach them. A call on a down connection fails with
// ErrDown unapplied; one on a stalled connection waits until its context
// ends and is applied when the connection resumes, as TCP delivers what it
// retransmitted once a partition heals.
func TestConnFaultsCutOneConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		a := memory.New()
		b := a.Conn()
		if ok, err := a.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
			t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
		}

		b.SetConnDown(true)
		if _, err := b.SetNX(ctx, "j", "w", time.Minute); !errors.Is(err, memory.ErrDown) {
			t.Errorf("SetNX through a down Conn = %v, want ErrDown", err)
		}
		if a.Holds("j") {
			t.Error("a SetNX through a down Conn was applied: a refused connection sends nothing")
		}
		if ok, err := a.Extend(ctx, "k", "v", time.Minute); !ok || err != nil {
			t.Errorf("Extend through the other connection while a Conn is down = %v, %v; want true, nil: SetConnDown cuts one connection", ok, err)
		}
		b.SetConnDown(false)
		if ok, err := b.Extend(ctx, "k", "v", time.Minute); !ok || err != nil {
			t.Errorf("Extend through a Conn up again = %v, %v; want true, nil: the store kept the key", ok, err)
		}

		b.SetConnStalled(true)
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		start := time.Now()
		_, err := b.SetNX(cctx, "j", "w", time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("SetNX through a stalled Conn = %v after %v, want context.DeadlineExceeded after its 1s timeout", err, time.Since(start))
		}
		if a.Holds("j") {
			t.Error("a SetNX held by a stalled Conn was applied before it resumed")
		}
		if ok, err := a.EvalRelease(ctx, "k", "v"); !ok || err != nil {
			t.Errorf("EvalRelease through the other connection while a Conn is stalled = %v, %v; want true, nil", ok, err)
		}
		b.SetConnStalled(false)
		if !a.Holds("j") {
			t.Error("the SetNX a stalled Conn held was not applied when it resumed")
		}
		if ok, err := b.SetNX(ctx, "k", "w", time.Minute); !ok || err != nil {
			t.Errorf("SetNX through a resumed Conn = %v, %v; want true, nil", ok, err)
		}

		// A Conn stalled while its store is stalled too: resumed first, its
		// calls wait for the store.
		a.SetStalled(true)
		b.SetConnStalled(true)
		done := make(chan error, 1)
		go func() {
			_, err := b.EvalRelease(ctx, "k", "w")
			done <- err
		}()
		synctest.Wait()
		b.SetConnStalled(false)
		synctest.Wait()
		if !a.Holds("k") {
			t.Error("a call the Conn held was applied while the store was stalled")
		}
		a.SetStalled(false)
		if err := <-done; err != nil || a.Holds("k") {
			t.Errorf("EvalRelease once Conn and store resumed = %v, key held %v; want nil, released", err, a.Holds("k"))
		}
	})
}

// A subscription made through a cut Conn receives no release while cut (the
// message does not reach it), and receives them again once it is healed.
func TestConnCutSubscription(t *testing.T) {
	ctx := context.Background()
	a := memory.New()
	b := a.Conn()
	notify := make(chan struct{}, 1)
	cancel, err := b.Subscribe(ctx, "k", notify)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	release := func() {
		t.Helper()
		if ok, err := a.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
			t.Fatalf("SetNX = %v, %v", ok, err)
		}
		if ok, err := a.ReleaseNotify(ctx, "k", "v"); !ok || err != nil {
			t.Fatalf("ReleaseNotify = %v, %v", ok, err)
		}
	}
	for _, cut := range []struct {
		name string
		set  func(bool)
	}{{"SetConnDown", b.SetConnDown}, {"SetConnStalled", b.SetConnStalled}} {
		cut.set(true)
		release()
		select {
		case <-notify:
			t.Errorf("%s: a subscription through the cut Conn was notified", cut.name)
		default:
		}
		cut.set(false)
		release()
		select {
		case <-notify:
		default:
			t.Errorf("%s: a subscription through the healed Conn was not notified", cut.name)
		}
	}
}

// The partition a user of a lock must test: one Client cut from two of three
// nodes while another still reaches them all. The cut Client's Do loses the
// lock once its extensions have failed until its validity ended (fn's
// context canceled, cause ErrLockLost); the
// other acquires it only once the keys the cut Client left on the nodes it
// cannot reach have expired (after the TTL), never while fn still runs; and
// once healed, both work again.
func TestConnPartitionOneClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 9 * time.Second // extended every 3s; node timeout 200ms
		nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
		conns := func() []*memory.Node { return []*memory.Node{nodes[0].Conn(), nodes[1].Conn(), nodes[2].Conn()} }
		newClient := func(cs []*memory.Node) *redlock.Client {
			c, err := redlock.New([]driver.Node{cs[0], cs[1], cs[2]}, redlock.WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		ours, theirs := conns(), conns()
		us, them := newClient(ours), newClient(theirs)

		lost := make(chan struct{}) // closed when our fn learns the lock is lost
		acquired := make(chan time.Duration, 1)
		var granted time.Time
		err := us.Do(t.Context(), "k", func(ctx context.Context) error {
			granted = time.Now()
			// A grant needs a quorum: let the SET still on its way to
			// the third node land, so that our key is on every node,
			// the ones we are about to lose included.
			synctest.Wait()
			ours[1].SetConnDown(true)    // refused
			ours[2].SetConnStalled(true) // packets dropped
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				l, err := them.Lock(ctx, "k")
				if err != nil {
					t.Errorf("the other Client's Lock = %v, want the lock once ours expired", err)
					acquired <- -1
					return
				}
				select {
				case <-lost:
				default:
					t.Error("the other Client acquired the lock while our fn still ran: two holders")
				}
				d := time.Since(granted)
				if err := l.Unlock(context.Background()); err != nil {
					t.Errorf("the other Client's Unlock = %v", err)
				}
				acquired <- d
			}()
			select {
			case <-ctx.Done():
				// The extensions fail (one node refuses the
				// connection, one does not answer) without a node
				// saying the key is gone: Do keeps trying and tells
				// fn when the validity ends, the TTL less the drift.
				if since := time.Since(granted); since <= ttl/3 || since > ttl-ttl/100-2*time.Millisecond {
					t.Errorf("lock lost %v after the grant, want after the first extension (3s) and by the end of its validity (8.908s)", since)
				}
				close(lost)
				return context.Cause(ctx)
			case <-time.After(time.Minute): // virtual time: a bound, costs nothing
				close(lost)
				return errors.New("fn was not told that the lock was lost")
			}
		})
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Do cut from two of three nodes = %v, want ErrLockLost", err)
		}
		if d := <-acquired; d < ttl {
			t.Errorf("the other Client acquired the lock %v after our grant, want at least the TTL %v: our keys on the nodes we could not reach lived that long", d, ttl)
		}
		ours[1].SetConnDown(false)
		ours[2].SetConnStalled(false) // applies our extensions and release it held, of our value
		synctest.Wait()               // the other Client's release on its third node lands (Unlock returns at a quorum)
		for i, n := range nodes {
			if n.Holds("k") {
				t.Errorf("node %d holds k after the other Client unlocked and the partition healed: a late call of ours set it", i)
			}
		}
		start := time.Now()
		err = us.Do(t.Context(), "k", func(ctx context.Context) error {
			time.Sleep(time.Minute) // virtual: twenty extensions
			return context.Cause(ctx)
		})
		if err != nil || time.Since(start) != time.Minute {
			t.Errorf("Do after healing = %v after %v, want nil after 1m", err, time.Since(start))
		}
		if l, err := them.TryLock(t.Context(), "k"); err != nil {
			t.Errorf("the other Client's TryLock after ours unlocked = %v, want the lock", err)
		} else {
			l.Unlock(t.Context())
		}
	})
}
