package rediscmd

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestCommands checks that each method of Commands sends its command with
// Run, and returns Run's result and error as its driver interface method
// does.
func TestCommands(t *testing.T) {
	var (
		sent []Cmd
		res  Result
		err  error
	)
	c := Commands{Run: func(_ context.Context, cmd Cmd) (Result, error) {
		sent = append(sent, cmd)
		return res, err
	}}
	ctx := context.Background()
	res = Result{OK: true, Counter: 7, TTL: 3 * time.Second}

	type outcome struct {
		ok      bool
		counter uint64
		ttl     time.Duration
		err     error
	}
	calls := []struct {
		name string
		call func() outcome
		want Cmd
	}{
		{"SetNX", func() outcome { ok, err := c.SetNX(ctx, "k", "v", time.Second); return outcome{ok: ok, err: err} },
			SetNX("k", "v", time.Second)},
		{"EvalRelease", func() outcome { ok, err := c.EvalRelease(ctx, "k", "v"); return outcome{ok: ok, err: err} },
			Release("k", "v")},
		{"Extend", func() outcome { ok, err := c.Extend(ctx, "k", "v", 2*time.Second); return outcome{ok: ok, err: err} },
			Extend("k", "v", 2*time.Second)},
		{"SetNXFence", func() outcome {
			ok, n, err := c.SetNXFence(ctx, "k", "v", time.Second, "f")
			return outcome{ok: ok, counter: n, err: err}
		}, SetNXFence("k", "v", time.Second, "f")},
		{"RaiseFence", func() outcome { ok, err := c.RaiseFence(ctx, "k", "v", "f", 9); return outcome{ok: ok, err: err} },
			RaiseFence("k", "v", "f", 9)},
		{"TTL", func() outcome { ttl, ok, err := c.TTL(ctx, "k", "v"); return outcome{ok: ok, ttl: ttl, err: err} },
			TTL("k", "v")},
		{"ReleaseNotify", func() outcome { ok, err := c.ReleaseNotify(ctx, "k", "v"); return outcome{ok: ok, err: err} },
			ReleaseNotify("k", "v")},
		{"ReleaseNotifyOn", func() outcome {
			ok, err := c.ReleaseNotifyOn(ctx, "k", "v", "ch")
			return outcome{ok: ok, err: err}
		}, ReleaseNotifyOn("k", "v", "ch")},
	}
	boom := errors.New("boom")
	for _, tc := range calls {
		for _, e := range []error{nil, boom} {
			sent, err = nil, e
			got := tc.call()
			if len(sent) != 1 || sent[0] != tc.want {
				t.Errorf("%s sent %+v, want one %+v", tc.name, sent, tc.want)
			}
			if got.err != e {
				t.Errorf("%s returned error %v, want %v", tc.name, got.err, e)
			}
			if !got.ok {
				t.Errorf("%s returned false for a Result with OK", tc.name)
			}
			switch tc.name {
			case "SetNXFence":
				if got.counter != 7 {
					t.Errorf("SetNXFence returned counter %d, want 7", got.counter)
				}
			case "TTL":
				if got.ttl != 3*time.Second {
					t.Errorf("TTL returned %v, want 3s", got.ttl)
				}
			}
		}
	}
}

// SetNXFence refused with CROSSSLOT (a cluster-enabled server given as one
// server, a key whose legacy counter is in another slot) is sent again as to
// a cluster, once; a key whose counters share its slot is not sent again.
func TestSetNXFenceCrossSlot(t *testing.T) {
	crossSlot := fmt.Errorf("goredis: SET NX fence: %w", errors.New("CROSSSLOT Keys in request don't hash to the same slot"))
	for _, tc := range []struct {
		key   string
		sends int
	}{{"a}b", 2}, {"plain", 1}} {
		var sent []Cmd
		c := Commands{Run: func(_ context.Context, cmd Cmd) (Result, error) {
			sent = append(sent, cmd)
			if !cmd.Cluster {
				return Result{}, crossSlot
			}
			return Result{OK: true, Counter: 4}, nil
		}}
		ok, n, err := c.SetNXFence(context.Background(), tc.key, "v", time.Second, "f")
		if len(sent) != tc.sends {
			t.Fatalf("%q: sent %d times, want %d", tc.key, len(sent), tc.sends)
		}
		if tc.sends == 2 {
			if !sent[1].Cluster || !ok || n != 4 || err != nil {
				t.Errorf("%q: sent again %+v, returned %v %d %v", tc.key, sent[1], ok, n, err)
			}
		} else if !errors.Is(err, crossSlot) {
			t.Errorf("%q: returned %v, want the CROSSSLOT error", tc.key, err)
		}
	}
}
