package redlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// gateObserver logs the starts of Do's extensions and of Unlocks, by key. It
// holds the first extension's start until firstGo is closed, and the start
// of an Unlock of another key until unlockGo is closed.
type gateObserver struct {
	redlock.NopObserver
	firstIn, firstGo, unlockGo chan struct{}

	mu    sync.Mutex
	first string // the key of the first extension started
	log   []string
}

func (o *gateObserver) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	o.mu.Lock()
	o.log = append(o.log, "extend "+e.Key)
	first := o.first == ""
	if first {
		o.first = e.Key
	}
	o.mu.Unlock()
	if first {
		close(o.firstIn)
		<-o.firstGo
	}
	return ctx, nil
}

func (o *gateObserver) Unlock(ctx context.Context, e redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	o.mu.Lock()
	o.log = append(o.log, "unlock "+e.Key)
	other := e.Key != o.first
	o.mu.Unlock()
	if other {
		<-o.unlockGo
	}
	return ctx, nil
}

// The keeper extends the locks due together as one group: it took two Do's
// locks, then, while it reported the first one's extension start, the other
// Do's function returned and its Unlock began. The keeper went on to start
// the second lock's extension all the same: reported after that lock's
// Unlock had started, its PEXPIREs sent beside the release. Seen as
// TestObserverDoEvents failing under load (an extension started after
// "start /do/unlock": 1 run in 150 with three busy loops on the 2 cores).
// Now an extension's start and Do's removal of its lock are ordered: the
// extension is started (and reported) before the removal, hence before
// Unlock, or not at all.
func TestKeeperStartsNoExtensionAfterUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &gateObserver{firstIn: make(chan struct{}), firstGo: make(chan struct{}), unlockGo: make(chan struct{})}
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithExtendInterval(time.Second), redlock.WithObserver(o))
		ret := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
		errs := make(chan error, 2)
		for key, r := range ret {
			go func() {
				errs <- c.Do(t.Context(), key, func(context.Context) error {
					<-r
					return nil
				})
			}()
		}
		<-o.firstIn // the keeper took both locks, due together, as a group
		o.mu.Lock()
		other := "a"
		if o.first == "a" {
			other = "b"
		}
		o.mu.Unlock()
		close(ret[other]) // its Do removes its lock and starts Unlock
		synctest.Wait()
		close(o.firstGo)
		synctest.Wait()
		close(o.unlockGo)
		close(ret[o.first])
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("Do = %v", err)
			}
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		unlocked := false
		for _, e := range o.log {
			switch e {
			case "unlock " + other:
				unlocked = true
			case "extend " + other:
				if unlocked {
					t.Errorf("an extension of %q started after its Unlock: %v", other, o.log)
				}
			}
		}
		if !unlocked {
			t.Errorf("no Unlock of %q: %v", other, o.log)
		}
	})
}

// holdStart holds the start of the first extension of lock key, on the
// keeper's goroutine, until release is closed (in is closed once it is held),
// and logs the extensions' starts and the Unlocks' starts, by key.
type holdStart struct {
	redlock.NopObserver
	key         string
	in, release chan struct{}

	mu   sync.Mutex
	held bool
	log  []string
}

func (o *holdStart) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	o.mu.Lock()
	hold := e.Key == o.key && !o.held
	o.held = o.held || hold
	o.mu.Unlock()
	if hold {
		close(o.in)
		<-o.release
	}
	o.add("extend " + e.Key)
	return ctx, nil
}

func (o *holdStart) Unlock(ctx context.Context, e redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	o.add("unlock " + e.Key)
	return ctx, nil
}

func (o *holdStart) add(s string) {
	o.mu.Lock()
	o.log = append(o.log, s)
	o.mu.Unlock()
}

// The order of an extension's start and Do's removal of its lock is the
// lock's own: a Do whose function returns while the start of another lock's
// extension is being reported (an observer slow to return) releases its lock
// and returns without waiting for it. It waited when the order was the
// Client's (one turn for every lock's extension start and every Do's
// removal): one slow observer, or many extensions starting at once, held
// every Do of the Client. A Do whose own lock's extension is starting still
// waits for the start to be reported before its Unlock starts (see
// TestKeeperStartsNoExtensionAfterUnlock).
func TestKeeperStartHoldsNoOtherLocksDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &holdStart{key: "x", in: make(chan struct{}), release: make(chan struct{})}
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithExtendInterval(time.Second), redlock.WithObserver(o))
		do := func(key string, ret chan struct{}) chan error {
			errc := make(chan error, 1)
			go func() {
				errc <- c.Do(t.Context(), key, func(context.Context) error {
					<-ret
					return nil
				})
			}()
			return errc
		}
		xRet, yRet := make(chan struct{}), make(chan struct{})
		xErr := do("x", xRet)
		// y's extensions are due 100ms after x's, beyond keeperWindow:
		// not in x's group.
		time.Sleep(100 * time.Millisecond)
		yErr := do("y", yRet)
		<-o.in // the start of x's extension, held by the observer
		close(yRet)
		synctest.Wait()
		yDone := false
		select {
		case err := <-yErr:
			yDone = true
			if err != nil {
				t.Errorf("Do(y) = %v", err)
			}
		default:
			t.Errorf("Do(y), whose function returned, had not returned while the start of x's extension was held: it waited for another lock's extension")
		}
		close(xRet)
		synctest.Wait()
		select {
		case err := <-xErr:
			t.Errorf("Do(x) = %v while the start of its lock's extension was held: its Unlock did not wait for it", err)
		default:
		}
		close(o.release)
		if err := <-xErr; err != nil {
			t.Errorf("Do(x) = %v", err)
		}
		if !yDone {
			if err := <-yErr; err != nil {
				t.Errorf("Do(y) = %v", err)
			}
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		want := []string{"unlock y", "extend x", "unlock x"}
		if !slices.Equal(o.log, want) {
			t.Errorf("observed %v, want %v", o.log, want)
		}
	})
}
