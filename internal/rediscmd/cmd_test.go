package rediscmd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

func TestCmdParse(t *testing.T) {
	const secret = "lock-value-secret"
	for _, tc := range []struct {
		op    rediscmd.Op
		reply any
		want  rediscmd.Result
		err   bool
	}{
		{rediscmd.OpSetNX, "OK", rediscmd.Result{OK: true}, false},
		{rediscmd.OpSetNX, []byte("OK"), rediscmd.Result{OK: true}, false},
		{rediscmd.OpSetNX, nil, rediscmd.Result{}, false},
		{rediscmd.OpSetNX, int64(1), rediscmd.Result{}, true},
		{rediscmd.OpRelease, int64(1), rediscmd.Result{OK: true}, false},
		{rediscmd.OpReleaseNotify, int64(0), rediscmd.Result{}, false},
		{rediscmd.OpExtend, int64(2), rediscmd.Result{}, true},
		{rediscmd.OpRaiseFence, "1", rediscmd.Result{}, true},
		{rediscmd.OpSetNXFence, []any{int64(1), "41"}, rediscmd.Result{OK: true, Counter: 41}, false},
		{rediscmd.OpSetNXFence, []any{int64(0), []byte("18446744073709551615")}, rediscmd.Result{Counter: 1<<64 - 1}, false},
		{rediscmd.OpSetNXFence, []any{int64(1)}, rediscmd.Result{}, true},
		{rediscmd.OpSetNXFence, []any{int64(3), "1"}, rediscmd.Result{}, true},
		{rediscmd.OpSetNXFence, []any{int64(1), "-1"}, rediscmd.Result{}, true},
		{rediscmd.OpSetNXFence, []any{int64(1), secret}, rediscmd.Result{}, true},
		{rediscmd.OpSetNXFence, []any{int64(1), int64(4)}, rediscmd.Result{}, true},
	} {
		cmd := rediscmd.Cmd{Op: tc.op, Key: "k", Value: secret}
		got, err := cmd.Parse(tc.reply)
		if tc.err {
			require.Error(t, err, "%v %#v", tc.op, tc.reply)
			require.NotContains(t, err.Error(), secret, "an error never shows a lock value")
			continue
		}
		require.NoError(t, err, "%v %#v", tc.op, tc.reply)
		require.Equal(t, tc.want, got, "%v %#v", tc.op, tc.reply)
	}
}

func TestCmdEncoding(t *testing.T) {
	ttl := 1500*time.Millisecond + 1 // rounds up
	fk, pk := driver.FenceKey("lock:k"), driver.PrefixFenceKey("lock:", "lock:k")
	require.Equal(t, "lock:"+fk, pk)
	for _, tc := range []struct {
		cmd    rediscmd.Cmd
		script driver.Script // zero for none
		keys   []string
		args   []string
		name   string
	}{
		{rediscmd.SetNX("k", "v", ttl), driver.Script{}, []string{"k"}, []string{"v", "NX", "PX", "1501"}, "SET NX"},
		// A prefixed counter ("lock:" + FenceKey) reads the shared one too,
		// and every counter reads the legacy one: arguments, never keys
		// (see Cmd.Args).
		{rediscmd.SetNXFence("lock:k", "v", ttl, pk), driver.SetNXFenceScript(), []string{"lock:k", pk}, []string{"v", "1501", fk, "{lock:k}:fence"}, "SET NX fence"},
		{rediscmd.SetNXFence("lock:k", "v", ttl, fk), driver.SetNXFenceScript(), []string{"lock:k", fk}, []string{"v", "1501", "{lock:k}:fence"}, "SET NX fence"},
		{rediscmd.SetNXFence("k}", "v", ttl, driver.FenceKey("k}")), driver.SetNXFenceScript(), []string{"k}", driver.FenceKey("k}")}, []string{"v", "1501", "k}:fence"}, "SET NX fence"},
		{rediscmd.Release("k", "v"), driver.ReleaseScript(), []string{"k"}, []string{"v"}, "release"},
		{rediscmd.ReleaseNotify("k", "v"), driver.ReleaseNotifyScript(), []string{"k"}, []string{"v", driver.ReleaseChannel("k")}, "release"},
		{rediscmd.Extend("k", "v", ttl), driver.ExtendScript(), []string{"k"}, []string{"v", "1501"}, "extend"},
		{rediscmd.RaiseFence("k", "v", "f", 9), driver.RaiseFenceScript(), []string{"k", "f"}, []string{"v", "9"}, "raise fence"},
		{again(rediscmd.SetNX("k", "v", ttl)), driver.SetNXAgainScript(), []string{"k"}, []string{"v", "1501"}, "SET NX again"},
		{again(rediscmd.SetNXFence("lock:k", "v", ttl, pk)), driver.SetNXAgainScript(), []string{"lock:k", pk}, []string{"v", "1501", fk, "{lock:k}:fence"}, "SET NX again"},
		{again(rediscmd.SetNXFence("lock:k", "v", ttl, fk)), driver.SetNXAgainScript(), []string{"lock:k", fk}, []string{"v", "1501", "{lock:k}:fence"}, "SET NX again"},
	} {
		s, ok := tc.cmd.Script()
		require.Equal(t, tc.script, s, tc.name)
		require.Equal(t, tc.script != driver.Script{}, ok, tc.name)
		require.Equal(t, tc.keys, tc.cmd.Keys(), tc.name)
		keys, n := tc.cmd.KeyArray()
		require.Equal(t, tc.keys, keys[:n], "KeyArray of %s", tc.name)
		require.Equal(t, tc.args, tc.cmd.Args(), tc.name)
		args, n := tc.cmd.ArgArray()
		require.Equal(t, tc.args, args[:n], "ArgArray of %s", tc.name)
		require.Equal(t, tc.name, tc.cmd.Op.String())
	}
	require.Equal(t, "op 99", rediscmd.Op(99).String())
}

// again returns c.Again(): what a driver sends in c's place.
func again(c rediscmd.Cmd) rediscmd.Cmd { return c.Again() }

// TestAgain: a SET NX, plain or fenced, goes again as
// driver.SetNXAgainScript, whose reply parses as SetNXFenceScript's; every
// other command goes again as it is.
func TestAgain(t *testing.T) {
	for _, c := range []rediscmd.Cmd{
		rediscmd.Release("k", "v"), rediscmd.ReleaseNotify("k", "v"), rediscmd.Extend("k", "v", time.Second),
		rediscmd.RaiseFence("k", "v", "f", 3), rediscmd.TTL("k", "v"),
	} {
		require.Equal(t, c, c.Again(), "%s goes again as it is", c.Op)
	}
	for _, c := range []rediscmd.Cmd{rediscmd.SetNX("k", "v", time.Second), rediscmd.SetNXFence("k", "v", time.Second, "f")} {
		a := c.Again()
		require.Equal(t, rediscmd.OpSetNXAgain, a.Op, "%s goes again as", c.Op)
		require.Equal(t, [3]any{c.Key, c.Value, c.TTL}, [3]any{a.Key, a.Value, a.TTL})
		r, err := a.Parse([]any{int64(1), "7"})
		require.NoError(t, err)
		require.Equal(t, rediscmd.Result{OK: true, Counter: 7}, r)
		r, err = a.Parse([]any{int64(0), "0"})
		require.NoError(t, err)
		require.Equal(t, rediscmd.Result{}, r)
	}
}

// TestReleaseNotifyOn checks that a release given its channel sends what one
// that computes it sends, and that the channel given is the one sent.
func TestReleaseNotifyOn(t *testing.T) {
	for _, key := range []string{"k", "a{tag}b", "{}x", ""} {
		plain := rediscmd.ReleaseNotify(key, "v")
		want := plain.Args()
		on := rediscmd.ReleaseNotifyOn(key, "v", driver.ReleaseChannel(key))
		if got := on.Args(); !slices.Equal(got, want) {
			t.Errorf("key %q: ReleaseNotifyOn args %q, ReleaseNotify args %q", key, got, want)
		}
		if s, _ := on.Script(); s.SHA1() != driver.ReleaseNotifyScript().SHA1() {
			t.Errorf("key %q: ReleaseNotifyOn runs %s, want the release-notify script", key, s.SHA1())
		}
	}
	other := rediscmd.ReleaseNotifyOn("k", "v", "other")
	if got := other.Args(); !slices.Equal(got, []string{"v", "other"}) {
		t.Errorf("ReleaseNotifyOn with channel %q: args %q", "other", got)
	}
}

// OnShard names the key's slot, and the primary when one is given, and keeps
// err in the chain.
func TestOnShard(t *testing.T) {
	err := rediscmd.OnShard("k", "10.0.0.7:6379", context.DeadlineExceeded)
	require.EqualError(t, err, fmt.Sprintf("slot %d, primary 10.0.0.7:6379: context deadline exceeded", driver.HashSlot("k")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	err = rediscmd.OnShard("{user1}:lock", "", context.Canceled)
	require.EqualError(t, err, fmt.Sprintf("slot %d: context canceled", driver.HashSlot("user1")))
	require.ErrorIs(t, err, context.Canceled)
}

// A repeat that fails too tells both errors, the first send's (why the call
// went again) and the repeat's, and errors.Is finds each; a repeat that
// answers gives its answer, but a release that deleted nothing, which the
// first send may have done, gives the first send's error.
func TestRepeatedTellsBothErrors(t *testing.T) {
	first := fmt.Errorf("goredis: release: %w", io.EOF)
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, op := range []rediscmd.Op{rediscmd.OpSetNX, rediscmd.OpRelease, rediscmd.OpExtend} {
		c := rediscmd.Cmd{Op: op, Key: "k", Value: "v"}
		_, err := c.Repeated(rediscmd.Result{}, refused, first)
		require.ErrorIs(t, err, io.EOF, "op %v", op)
		require.ErrorIs(t, err, refused, "op %v", op)
		require.Equal(t, first.Error()+"; sent again: "+refused.Error(), err.Error())

		r, err := c.Repeated(rediscmd.Result{OK: true}, nil, first)
		require.NoError(t, err, "op %v: the repeat answered", op)
		require.True(t, r.OK)
	}
	_, err := (&rediscmd.Cmd{Op: rediscmd.OpRelease}).Repeated(rediscmd.Result{}, nil, first)
	require.Equal(t, first, err, "a repeated release that deleted nothing is no answer")
	r, err := (&rediscmd.Cmd{Op: rediscmd.OpSetNX}).Repeated(rediscmd.Result{}, nil, first)
	require.NoError(t, err, "a repeated SET NX that found the key held is a refusal")
	require.False(t, r.OK)
}
