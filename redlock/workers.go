package redlock

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long an idle worker waits for a call before it exits,
// and maxIdleWorkers how many may wait at once: after a burst of calls (the
// acquisitions of thousands of locks at once), the workers beyond that exit
// at once rather than hold their stacks. It is large enough that calls to
// stalled nodes, which hold workers for up to twice the node timeout, do
// not make workers exit and start again by the thousand (256 cost the
// Stalled case at 64 lockers half its throughput). The idle ones exit after
// a few seconds, so that the stacks of the workers of a burst (4 KB each,
// once a collection has shrunk them) do not stay beside the locks that Do
// then holds: under a steady load, workers never wait that long.
const (
	workerIdle     = 2 * time.Second
	maxIdleWorkers = 4096
)

// A task is one node call of a round, or the first attempt of a Do (d), or
// the watch of its context while it waits for a slot (d and watch).
type task struct {
	r     *round
	i     int
	d     *doCall
	watch bool
}

// workers runs the node calls of a Client's rounds on goroutines that are
// reused from call to call, instead of starting one per node per call. A call
// goes to an idle worker if there is one, and otherwise to a new worker; so
// calls never queue, and the pool grows to the number of calls in flight and
// shrinks again to maxIdleWorkers at once, and to none after workerIdle. Close ends the idle workers at once and
// the busy ones when their call returns.
type workers struct {
	tasks chan task // unbuffered: a send succeeds only if a worker is idle
	quit  chan struct{}
	once  sync.Once
	idle  atomic.Int32 // workers waiting for a call
}

func newWorkers() *workers {
	return &workers{tasks: make(chan task), quit: make(chan struct{})}
}

func (w *workers) run(t task) {
	select {
	case w.tasks <- t:
	default:
		go w.work(t)
	}
}

func (w *workers) work(t task) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		switch {
		case t.watch:
			t.d.watch()
		case t.d != nil:
			t.d.first()
		default:
			t.r.call(t.i)
		}
		t = task{} // do not keep the round alive while idle
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		idle.Reset(workerIdle)
		select {
		case t = <-w.tasks:
			w.idle.Add(-1)
		case <-idle.C:
			w.idle.Add(-1)
			return
		case <-w.quit:
			w.idle.Add(-1)
			return
		}
	}
}

func (w *workers) close() { w.once.Do(func() { close(w.quit) }) }
