package rediscmd

import (
	"context"
	"errors"
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
