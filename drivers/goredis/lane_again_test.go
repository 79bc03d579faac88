package goredis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/redistest"
)

// A lone call that fails on the node's lane because the server closed its
// connection (CLIENT KILL) goes again through the pool as
// rediscmd.Cmd.Again says, and its outcome is read as rediscmd.Cmd.Repeated
// says, also when the first send was run by the server before it closed the
// connection (made here by setting the key as that send would have): a SET
// NX counts a key that holds the call's value as set, leaving the expiry
// that send gave it, refuses one that holds another value, and reads the
// fencing counter; a release that deletes nothing is no answer (the first
// send's error), one that deletes the key is. Conformance's
// Reconnects/RightAfterKillNodeTimeout sends fresh keys only, which a plain
// SET NX sent again sets too, and releases a key that is there.
func TestLaneRepeatAfterKill(t *testing.T) {
	srv := redistest.NewServer(t)
	n, ctx := laneOn(t, srv.Addr())
	do := func(args ...string) any {
		t.Helper()
		v, err := srv.Do(t.Context(), args...)
		require.NoError(t, err, "%v", args)
		return v
	}
	do("SET", "mine", "v", "PX", "30000") // as a first send the server ran would have
	do("SET", "fenced-mine", "v", "PX", "30000")
	do("SET", "theirs", "w")
	do("SET", "{f}:fence", "5")
	do("SET", "held", "v")
	// killed sends a lone call on the lane (so that its connection was
	// used just before), has the server close every connection, and
	// returns once the next lone call is sure to meet the lane.
	killed := func() {
		t.Helper()
		_, err := n.SetNX(ctx, "warm", "v", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, n.lanes.idle.Load(), "no idle lane before the kill")
		do("CLIENT", "KILL", "TYPE", "normal")
	}
	onLane := func(what string) {
		t.Helper()
		require.False(t, n.lanes.made.Load(), "%s: the call did not fail on the lane (kept)", what)
	}
	for _, c := range []struct {
		key  string
		want bool
	}{{"mine", true}, {"free", true}, {"theirs", false}} {
		killed()
		ok, err := n.SetNX(ctx, c.key, "v", time.Minute)
		onLane("SetNX " + c.key)
		require.NoError(t, err, "SetNX %s right after the kill", c.key)
		require.Equal(t, c.want, ok, "SetNX %s right after the kill", c.key)
	}
	ms, ok := do("PTTL", "mine").(int64)
	require.True(t, ok && ms > 0 && ms <= 30000, "PTTL mine after the repeat = %d; want the first send's, in (0, 30000]", ms)
	require.Equal(t, "w", do("GET", "theirs"))

	for _, c := range []struct {
		key  string
		want uint64
	}{{"fenced-mine", 5}, {"fenced-free", 5}} {
		killed()
		ok, counter, err := n.SetNXFence(ctx, c.key, "v", time.Minute, "{f}:fence")
		onLane("SetNXFence " + c.key)
		require.NoError(t, err, "SetNXFence %s right after the kill", c.key)
		require.True(t, ok, "SetNXFence %s right after the kill", c.key)
		require.Equal(t, c.want, counter, "SetNXFence %s right after the kill: the counter", c.key)
	}

	killed()
	ok, err := n.EvalRelease(ctx, "gone", "v")
	onLane("EvalRelease gone")
	require.True(t, connalive.Broken(err), "EvalRelease of a key not there right after the kill = %v, %v; want the first send's error: it may have deleted the key", ok, err)

	killed()
	ok, err = n.EvalRelease(ctx, "held", "v")
	onLane("EvalRelease held")
	require.NoError(t, err, "EvalRelease of a key held right after the kill")
	require.True(t, ok, "EvalRelease of a key held right after the kill")
	require.EqualValues(t, 0, do("EXISTS", "held"))
}
