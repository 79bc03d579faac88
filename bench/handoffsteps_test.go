package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/redlock"
)

// BenchmarkHandoffSteps runs the Handoff case with an Observer on every
// Client and logs where the hand-offs' time went: the attempts made, the
// split votes, the holder's release replies, the winner's wake and its delay
// before the attempt, its SET replies. Run one setup at a time (the log
// counts every sub-benchmark the driver ran), from bench/:
//
//	go test -run '^$' -bench 'HandoffSteps/goredis/nodes=5/clients=2/' -benchtime 300x -v .
//
// The Observer's calls cost the hand-off a little: compare the timings with
// the Handoff case's, not the counts.
func BenchmarkHandoffSteps(b *testing.B) {
	for _, name := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		b.Run(name, func(b *testing.B) {
			o := &stepObserver{start: time.Now()}
			bench.Handoff(b, bench.Driver(name, redlock.WithObserver(o)))
			o.mu.Lock()
			defer o.mu.Unlock()
			b.Log("\n" + handoffSteps(o.ev))
		})
	}
}

// A step is one event seen by stepObserver.
type step struct {
	at    time.Duration // since the observer's start
	kind  byte          // U Unlock starts, W wake, A attempt starts, a attempt ends, N node call, L Lock ends
	lock  int64         // the Lock call's number; 0 outside Lock (Unlock's calls)
	votes redlock.Votes
	op    string
	dur   time.Duration
	ok    bool
}

type stepObserver struct {
	redlock.NopObserver
	mu    sync.Mutex
	start time.Time
	ev    []step
}

type lockIDKey struct{}

var lockIDs atomic.Int64

func lockID(ctx context.Context) int64 { id, _ := ctx.Value(lockIDKey{}).(int64); return id }

func (o *stepObserver) add(s step) {
	o.mu.Lock()
	s.at = time.Since(o.start)
	o.ev = append(o.ev, s)
	o.mu.Unlock()
}

func (o *stepObserver) Unlock(ctx context.Context, _ redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	o.add(step{kind: 'U'})
	return ctx, func(redlock.UnlockDone) {}
}

func (o *stepObserver) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	id := lockIDs.Add(1)
	return context.WithValue(ctx, lockIDKey{}, id), func(d redlock.LockDone) {
		o.add(step{kind: 'L', lock: id, ok: d.Err == nil})
	}
}

func (o *stepObserver) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	id := lockID(ctx)
	o.add(step{kind: 'A', lock: id})
	return ctx, func(d redlock.AttemptDone) { o.add(step{kind: 'a', lock: id, votes: d.Votes}) }
}

func (o *stepObserver) NodeCall(ctx context.Context, e redlock.NodeCall) {
	o.add(step{kind: 'N', lock: lockID(ctx), op: e.Operation, dur: e.Duration, ok: e.OK})
}

func (o *stepObserver) Wake(ctx context.Context, _ redlock.Wake) {
	o.add(step{kind: 'W', lock: lockID(ctx)})
}

// handoffSteps splits ev into hand-offs, each from an Unlock's start to the
// next Lock that got the key (the winner), and tells where their time went.
func handoffSteps(ev []step) string {
	var (
		n, split, woken, refusedAll, allAttempts int
		winAttempts                              = map[int]int{}
		total, one, more                         []time.Duration
		rel1, rel3, relLast, wake, delay, acq3   []time.Duration
		acq1, spare                              []time.Duration
	)
	for i, u := range ev {
		if u.kind != 'U' {
			continue
		}
		j := i + 1
		for j < len(ev) && (ev[j].kind != 'L' || !ev[j].ok) {
			j++
		}
		if j == len(ev) {
			break
		}
		n++
		win := ev[j].lock
		total = append(total, ev[j].at-u.at)
		var (
			rels, acqs     []time.Duration
			wakeAt, lastAt = time.Duration(-1), time.Duration(-1)
			wins, splits   int
		)
		for _, e := range ev[i : j+1] {
			switch e.kind {
			case 'N':
				began := e.at - e.dur
				if e.lock == 0 && e.op == redlock.OpRelease && began >= u.at-10*time.Microsecond && began-u.at < 100*time.Microsecond {
					rels = append(rels, e.at-u.at)
				}
				if e.lock == win && e.op == redlock.OpAcquire && lastAt >= 0 && e.ok {
					acqs = append(acqs, e.at-lastAt)
				}
			case 'W':
				if e.lock == win {
					wakeAt = e.at
				}
			case 'A':
				allAttempts++
				if e.lock == win {
					wins++
					lastAt, acqs = e.at, acqs[:0]
				}
			case 'a':
				if e.votes.Granted > 0 && e.votes.Granted < e.votes.Quorum {
					splits++
				}
				if e.votes.Granted == 0 && e.votes.Refused > 0 {
					refusedAll++
				}
			}
		}
		winAttempts[min(wins, 4)]++
		if splits > 0 {
			split++
		}
		if wins == 1 {
			one = append(one, ev[j].at-u.at)
		} else if wins > 1 {
			more = append(more, ev[j].at-u.at)
		}
		slices.Sort(rels)
		if len(rels) >= 3 {
			rel1, rel3, relLast = append(rel1, rels[0]), append(rel3, rels[2]), append(relLast, rels[len(rels)-1])
		}
		if wakeAt >= 0 && lastAt >= wakeAt {
			woken++
			wake, delay = append(wake, wakeAt-u.at), append(delay, lastAt-wakeAt)
		}
		if len(acqs) >= 3 {
			slices.Sort(acqs)
			acq1, acq3 = append(acq1, acqs[0]), append(acq3, acqs[2])
			if len(rels) >= 3 && wakeAt >= 0 && lastAt >= wakeAt {
				spare = append(spare, lastAt+acqs[2]-u.at-rels[2])
			}
		}
	}
	var s strings.Builder
	if n == 0 {
		return "no hand-off seen"
	}
	fmt.Fprintf(&s, "%d hand-offs; the winner's attempts after the Unlock began (4: 4 or more): %v; woken by a notice: %d\n", n, winAttempts, woken)
	fmt.Fprintf(&s, "attempts of every locker: %.2f per hand-off, %d refused by every node that answered; hand-offs with a split vote: %d\n", float64(allAttempts)/float64(n), refusedAll, split)
	for _, r := range []struct {
		what string
		xs   []time.Duration
	}{
		{"hand-off", total},
		{"hand-off, the winner's first attempt", one},
		{"hand-off, the winner's later attempt", more},
		{"holder's release, 1st reply", rel1},
		{"holder's release, 3rd reply", rel3},
		{"holder's release, last reply", relLast},
		{"winner's last wake", wake},
		{"winner's wake to its attempt", delay},
		{"winner's attempt to its 1st grant", acq1},
		{"winner's attempt to its 3rd grant", acq3},
		// A SET sent to each node only once its release is done there
		// could not be granted by a quorum before the holder's 3rd
		// release reply and a round trip: when this spare time is under
		// a round trip, today's way (every SET at the first notice) is
		// the faster.
		{"woken winner's 3rd grant - 3rd release", spare},
	} {
		fmt.Fprintf(&s, "  %-38s p50 %9v  p90 %9v  (%d)\n", r.what, pctl(r.xs, 0.5), pctl(r.xs, 0.9), len(r.xs))
	}
	return s.String()
}

// pctl is the p-th quantile of xs, or -1 when xs is empty.
func pctl(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}
