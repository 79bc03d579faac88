package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A Conn is another connection to its Node's store: it sees the same keys,
// counters, subscribers and faults, and its Close is its own.
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
