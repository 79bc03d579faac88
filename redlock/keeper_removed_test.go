package redlock_test

import (
	"context"
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
