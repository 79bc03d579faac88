package faultproxy

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Every fault of a proxy is one state, faults, read by one toxic on each
// stream (faultToxic), installed before the proxy starts and never removed.
// Changing a fault changes the state and wakes the toxics; it never changes
// toxiproxy's chain of toxics.
//
// Why: toxiproxy v2.5.0 adds and removes a toxic by interrupting, on every
// connection, the toxic before it in the chain, holding the proxy's collection
// lock, and waits for that toxic to take the interruption. Its noop and
// latency toxics send to the next stage with a plain blocking send, and a
// connection whose writer ended (its client closed or reset the connection
// with replies on their way) has nobody reading that stage any more: the send,
// hence the interruption, hence the fault call and every later one and every
// new connection (which needs the same lock), wait for ever. Faults that are
// only state cannot wait on a connection: the only toxiproxy calls after the
// start are its own link start and end, and Stop.

// faults is a proxy's fault state, shared by its two toxics and every
// connection through them. Its methods are safe for concurrent use.
type faults struct {
	mu        sync.Mutex
	latency   [stream.NumDirections]time.Duration
	blackhole bool          // drop both streams
	lose      bool          // drop the downstream (replies)
	cut       bool          // close every connection
	cuts      uint64        // Cut calls so far
	isClosed  bool          // the proxy is closed
	changed   chan struct{} // closed, and replaced, on every change
	closed    chan struct{} // closed when the proxy is closed

	dropped atomic.Int64 // bytes dropped, both streams, every connection
}

func newFaults() *faults {
	return &faults{changed: make(chan struct{}), closed: make(chan struct{})}
}

// view is what a toxic on one stream must do now, and the channel closed at
// the next change.
type view struct {
	latency time.Duration
	drop    bool   // drop the data, keep the connection
	cut     bool   // close the connection
	cuts    uint64 // Cut calls so far: one since the connection started closes it
	changed <-chan struct{}
}

func (f *faults) view(d stream.Direction) view {
	f.mu.Lock()
	defer f.mu.Unlock()
	return view{
		latency: f.latency[d],
		drop:    f.blackhole || f.lose && d == stream.Downstream,
		cut:     f.cut,
		cuts:    f.cuts,
		changed: f.changed,
	}
}

// change applies set to the state and wakes every toxic, unless the proxy
// is closed; it reports whether it applied set.
func (f *faults) change(set func(*faults)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isClosed {
		return false
	}
	set(f)
	close(f.changed)
	f.changed = make(chan struct{})
	return true
}

// close marks the proxy closed and wakes every toxic to close its
// connection; it reports whether it was the first call.
func (f *faults) close() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isClosed {
		return false
	}
	f.isClosed = true
	close(f.closed)
	return true
}

// names returns the active faults' names, sorted.
func (f *faults) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range []struct {
		name   string
		active bool
	}{
		{"blackhole", f.blackhole},
		{"cut", f.cut},
		{"latency", f.latency[stream.Upstream] > 0 || f.latency[stream.Downstream] > 0},
		{"lose replies", f.lose},
	} {
		if n.active {
			out = append(out, n.name)
		}
	}
	return out
}

// faultToxicType is the name faultToxic is registered under.
const faultToxicType = "faultproxy_faults"

func init() { toxics.Register(faultToxicType, new(faultToxic)) }

// maxQueued bounds the chunks a connection's stream holds back for latency;
// beyond it the toxic stops reading, and the proxy's reader waits.
const maxQueued = 1024

// faultToxic applies a proxy's faults to one stream of every connection: it
// holds each chunk back until its arrival plus the stream's latency, drops
// it while the stream drops data (counting its bytes), and closes the
// connection's stream when the proxy is cut, when a stream that dropped data
// stops dropping (a TCP stream cannot skip bytes and carry on, so such a
// connection must not be reused) and when the proxy closes. Its send to the
// next stage also waits on every change and on the proxy's close, so that a
// connection whose writer has ended holds nobody but itself, and only until
// the proxy closes.
type faultToxic struct {
	f   *faults // set once, before the proxy starts
	dir stream.Direction
}

// linkState is one connection's stream state, kept across the toxic's runs.
type linkState struct {
	cuts    uint64                // the proxy's Cut calls when the connection started
	queue   []*stream.StreamChunk // held back for latency, in order
	eof     bool                  // the input has ended
	dropped bool                  // data was dropped on this stream
}

// NewState implements toxics.StatefulToxic: one state per connection's
// stream. toxiproxy calls it as the connection starts, before the toxic
// runs on it, so that a Cut from then on closes the connection even when a
// Heal follows before the toxic has looked.
func (t *faultToxic) NewState() any {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return &linkState{cuts: t.f.cuts}
}

// Pipe implements toxics.Toxic. It returns when the stream ends, when it
// closes the stream, or when toxiproxy interrupts it (which only a change of
// toxiproxy's chain does, and the proxy never changes it after its start);
// an interrupted run leaves its held-back chunks in the state for the next.
func (t *faultToxic) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*linkState)
	if st == nil {
		st, _ = t.NewState().(*linkState)
		stub.State = st
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		v := t.f.view(t.dir)
		if v.cut || v.cuts != st.cuts || st.dropped && !v.drop {
			t.closeStream(stub, st)
			return
		}
		// The head of the queue goes out when it is due (out), or the
		// timer says when it will be (due); meanwhile more is read.
		var (
			head *stream.StreamChunk
			out  chan<- *stream.StreamChunk
			due  <-chan time.Time
		)
		if len(st.queue) > 0 {
			head = st.queue[0]
			if v.drop {
				t.drop(st, head)
				st.pop()
				continue
			}
			if wait := time.Until(head.Timestamp.Add(v.latency)); wait > 0 {
				timer.Reset(wait)
				due = timer.C
			} else {
				out = stub.Output
			}
		} else if st.eof {
			stub.Close()
			return
		}
		if due == nil {
			timer.Stop()
		}
		var in <-chan *stream.StreamChunk
		if !st.eof && len(st.queue) < maxQueued {
			in = stub.Input
		}
		select {
		case out <- head:
			st.pop()
		case <-stub.Interrupt:
			return
		case <-v.changed:
		case <-t.f.closed:
			t.closeStream(stub, st)
			return
		case <-due:
		case c := <-in:
			// Read the faults again: a change may have come with the
			// chunk, and the select took the chunk first.
			switch {
			case c == nil:
				st.eof = true
			case t.f.view(t.dir).drop:
				t.drop(st, c)
			default:
				st.queue = append(st.queue, c)
			}
		}
	}
}

// drop counts c's bytes as dropped on this stream.
func (t *faultToxic) drop(st *linkState, c *stream.StreamChunk) {
	t.f.dropped.Add(int64(len(c.Data)))
	st.dropped = true
}

func (st *linkState) pop() {
	st.queue[0] = nil
	st.queue = st.queue[1:]
}

// closeStream drops what the stream holds back, closes it (toxiproxy's
// writer then closes its end of the connection, which ends the other stream
// too), and drops what still arrives until the input ends, so that the
// proxy's reader is never left waiting on this stream.
func (t *faultToxic) closeStream(stub *toxics.ToxicStub, st *linkState) {
	for len(st.queue) > 0 {
		t.drop(st, st.queue[0])
		st.pop()
	}
	stub.Close()
	for c := range stub.Input {
		t.drop(st, c)
	}
}
