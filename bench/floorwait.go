package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// floorPoll is the Backoff of a waiting floor between its attempts when no
// release notice came: redlock.DefaultBackoff, a Client's, so that a floor
// and a driver poll at the same times. Polls are not free on a machine whose
// idle cores are slow to wake: they keep them awake (see HandoffFloor).
var floorPoll = redlock.DefaultBackoff

// lockWaiting is the Lock of a waiting floor (WaitingFloors): the least a
// Redlock waiter can do by hand with its client, and no more. It sends SET
// key value NX PX ttl to every node at once, a goroutine per node, and holds
// the key as soon as a majority granted it; the other SETs finish in the
// background, and Unlock waits for their answers before it releases on
// every node, as a Client's does. When no majority granted it, it releases
// (by the release script) the nodes that did or failed, and
// waits for a release notice of the key on any node (SSUBSCRIBE to
// driver.ReleaseChannel(key) on every node, made at its first wait for the
// key and kept until Close), or for floorPoll's wait, then tries again: the
// notices and polls of a Client's Lock with the default Backoff, the polls'
// count starting again at each notice. It has none of a Client's logic: no
// random value per lock, no validity, no turns among its own waiters, no
// delay against split votes; it is a floor for one waiter.
func (l *floorLocker) lockWaiting(ctx context.Context, key string) (Held, error) {
	var notify chan struct{}
	for poll := 1; ; poll++ {
		if notify != nil {
			select { // a notice from before this attempt is moot
			case <-notify:
			default:
			}
		}
		ok, late, err := l.setMajority(ctx, key)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return floorHeld{l: l, key: key, late: late}, nil
		}
		if notify == nil {
			if notify, err = l.subs.get(ctx, l.nodes, key); err != nil {
				return nil, err
			}
			poll = 0 // a release may have come before the subscription: try at once
			continue
		}
		timer := time.NewTimer(floorPoll(poll))
		select {
		case <-notify:
			poll = 0
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

// setMajority sends SET NX PX to every node at once and reports, once a
// majority said OK, that the key is held, with the SETs still running (late:
// Unlock waits for their answers, as a Client's does, so that no release
// overtakes a SET), or, once a majority cannot, that it is not, after
// releasing the nodes that granted it or failed (a SET that failed may have
// been applied). err joins the nodes' errors, if any failed. The SETs are not
// cut by ctx's end, since one cut short may still be applied, after the
// release that undoes it; they are bounded by the clients' own timeouts.
// When ctx ends first, setMajority returns its error at once and undoes the
// grants in the background (undo), as a Client's Lock does.
func (l *floorLocker) setMajority(ctx context.Context, key string) (held bool, late *lateSets, err error) {
	n := len(l.nodes)
	answers := make(chan setAnswer, n)
	sctx := context.WithoutCancel(ctx)
	for i, node := range l.nodes {
		go func() {
			ok, err := node.setNX(sctx, key, l.value)
			answers <- setAnswer{i, ok, err}
		}()
	}
	var (
		yes, no int
		undo    []int // the nodes that said OK, or failed
		errs    []error
	)
	for yes <= n/2 && no < n-n/2 {
		select {
		case a := <-answers:
			if a.ok {
				yes++
				undo = append(undo, a.node)
			} else if no++; a.err != nil {
				errs = append(errs, a.err)
				undo = append(undo, a.node)
			}
		case <-ctx.Done():
			go l.undo(key, answers, n-yes-no, undo)
			return false, nil, fmt.Errorf("SET NX %s: %w", key, ctx.Err())
		}
	}
	if yes > n/2 {
		if rest := n - yes - no; rest > 0 {
			late = &lateSets{answers, rest}
		}
		return true, late, nil
	}
	l.undo(key, answers, n-yes-no, undo)
	if err := errors.Join(errs...); err != nil {
		return false, nil, fmt.Errorf("SET NX %s: %w", key, err)
	}
	return false, nil, nil
}

// undo waits for the rest answers still to come on answers, and releases
// key, by the release script, on the nodes of undo and those that granted it
// or failed among them: every grant must be known to be undone.
func (l *floorLocker) undo(key string, answers <-chan setAnswer, rest int, undo []int) {
	for range rest {
		if a := <-answers; a.ok || a.err != nil {
			undo = append(undo, a.node)
		}
	}
	if len(undo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	ch := driver.ReleaseChannel(key)
	for _, i := range undo {
		_ = l.nodes[i].release(ctx, key, l.value, ch) // on failure, the key expires
	}
}

// setAnswer is one node's answer to setMajority's SET.
type setAnswer struct {
	node int
	ok   bool
	err  error
}

// lateSets are the SETs of a held key still running when setMajority
// returned.
type lateSets struct {
	answers <-chan setAnswer
	n       int
}

// wait waits for the answers of the late SETs, or ctx's end.
func (s *lateSets) wait(ctx context.Context) {
	if s == nil {
		return
	}
	for ; s.n > 0; s.n-- {
		select {
		case <-s.answers:
		case <-ctx.Done():
			return
		}
	}
}

// floorSubs are a waiting floor's subscriptions to the release notices of
// the keys it waited for, one channel per key fed by every node.
type floorSubs struct {
	mu     sync.Mutex
	byKey  map[string]chan struct{}
	stops  []func()
	closed bool
}

// get returns the notices of key, subscribing on every node at the first call
// for key and returning once every subscription is confirmed.
func (s *floorSubs) get(ctx context.Context, nodes []floorNode, key string) (chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("floor: closed")
	}
	if ch, ok := s.byKey[key]; ok {
		return ch, nil
	}
	ch := make(chan struct{}, 1)
	channel := driver.ReleaseChannel(key)
	for _, node := range nodes {
		stop, err := node.subscribe(ctx, channel, ch)
		if err != nil {
			return nil, fmt.Errorf("SSUBSCRIBE %s: %w", channel, err)
		}
		s.stops = append(s.stops, stop)
	}
	if s.byKey == nil {
		s.byKey = make(map[string]chan struct{})
	}
	s.byKey[key] = ch
	return ch, nil
}

// stop ends every subscription.
func (s *floorSubs) stop() {
	s.mu.Lock()
	stops := s.stops
	s.stops, s.closed = nil, true
	s.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
