package safety_test

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Faults that Redlock's model tolerates, injected at random on random nodes
// while the actors run: latency, lost replies, a node down and back (a
// restart with persistence: its keys survive), a stalled node (a process
// stopped, or a network partition that holds the packets). Each lasts a
// random time up to the TTL; any number of nodes may be faulty at once,
// which costs liveness but never safety. Client pauses are the actors' own
// (see actor.hold), and clock rates are fixed per schedule.
const (
	fLatency = iota
	fLoseReplies
	fDown
	fStall
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"latency", "lost replies", "down (restart with persistence)", "stalled"}

type activeFault struct {
	node, kind int
	until      time.Time
}

// injectFaults runs until stop is closed, then heals every node.
func (sm *sim) injectFaults(r *rand.Rand, stop <-chan struct{}) {
	s := sm.s
	var active []activeFault
	heal := func(f activeFault) {
		m := sm.mem[f.node]
		switch f.kind {
		case fLatency:
			m.SetLatency(0)
		case fLoseReplies:
			m.SetLoseReplies(false)
		case fDown:
			m.SetDown(false)
		case fStall:
			m.SetStalled(false)
		}
		sm.nodeFault(-1, "", "", "")
		sm.logf("faults", "", "node %d: %s healed", f.node, faultNames[f.kind])
	}
	defer func() {
		for _, f := range active {
			heal(f)
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	next := time.Now().Add(drawDur(r, 0, s.faultGap)) // the next fault
	for {
		wake := next
		for _, f := range active {
			if f.until.Before(wake) {
				wake = f.until
			}
		}
		timer.Reset(time.Until(wake))
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		now := time.Now()
		kept := active[:0]
		for _, f := range active {
			if now.Before(f.until) {
				kept = append(kept, f)
			} else {
				heal(f)
			}
		}
		active = kept
		if now.Before(next) {
			continue
		}
		next = now.Add(drawDur(r, 0, s.faultGap))
		f := activeFault{node: r.IntN(s.nodes), kind: r.IntN(numFaultKinds), until: now.Add(drawDur(r, time.Millisecond, s.ttl))}
		dup := false
		for _, g := range active {
			dup = dup || (g.node == f.node && g.kind == f.kind)
		}
		if dup {
			continue
		}
		m := sm.mem[f.node]
		what := faultNames[f.kind]
		switch f.kind {
		case fLatency:
			d := drawDur(r, time.Millisecond, s.nodeTimeout*3/2)
			m.SetLatency(d)
			what = fmt.Sprintf("latency %v", d)
		case fLoseReplies:
			m.SetLoseReplies(true)
		case fDown:
			m.SetDown(true)
		case fStall:
			m.SetStalled(true)
		}
		active = append(active, f)
		sm.nodeFault(+1, "faults", "", "node %d: %s for %v", f.node, what, f.until.Sub(now))
	}
}

// injectUnsafe strikes the schedule's unsafe class while a lock is held with
// validity left, on a majority of the nodes, up to three times.
func (sm *sim) injectUnsafe(r *rand.Rand, stop <-chan struct{}) {
	s := sm.s
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for struck := 0; struck < 3; {
		timer.Reset(drawDur(r, s.ttl/20, s.ttl/4))
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		g := sm.holder(s.ttl / 4)
		if g == nil {
			continue
		}
		struck++
		for _, i := range r.Perm(s.nodes)[:sm.quorum] {
			m := sm.mem[i]
			switch s.class {
			case restartNoPersist:
				m.SetDown(true)
				m.Forget()
				sm.nodeFault(+1, "faults", g.key, "node %d restarts without persistence while #%d is held", i, g.id)
				time.Sleep(drawDur(r, 0, s.nodeTimeout))
				m.SetDown(false)
				sm.nodeFault(-1, "", "", "")
			case steppedClock:
				d := s.ttl + drawDur(r, 0, s.ttl)
				sm.clocks[i].Step(d)
				sm.nodeFault(0, "faults", g.key, "node %d's clock steps %v forward while #%d is held", i, d, g.id)
			case evictedEarly:
				m.Delete(g.key)
				sm.nodeFault(0, "faults", g.key, "node %d evicts %s while #%d is held", i, g.key, g.id)
			}
		}
	}
}
