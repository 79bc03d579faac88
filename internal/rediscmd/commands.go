package rediscmd

import (
	"context"
	"time"
)

// Commands are the command methods of a Redis driver's node, one per method
// of driver.Node, driver.Fencer, driver.TTLer, driver.Notifier and
// drivernode.ChannelNotifier, each building its Cmd and sending it with Run.
// A driver's node embeds Commands, with Run set to the node's own way of
// sending one command (its client, batching, lane), before the node is used:
// the methods then exist once for every driver.
type Commands struct {
	// Run sends cmd and returns its result; an error matches ctx's when
	// ctx is done (see Cmd.Failed).
	Run func(ctx context.Context, cmd Cmd) (Result, error)
}

// SetNX sends SET key value NX PX ttl.
func (c Commands) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return OK(c.Run(ctx, SetNX(key, value, ttl)))
}

// EvalRelease runs driver.ReleaseScript: DEL key if it holds value.
func (c Commands) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return OK(c.Run(ctx, Release(key, value)))
}

// Extend runs driver.ExtendScript: PEXPIRE key ttl if it holds value.
func (c Commands) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return OK(c.Run(ctx, Extend(key, value, ttl)))
}

// SetNXFence runs driver.SetNXFenceScript: SET key value NX PX ttl, and the
// counter at fenceKey read in the same step, with the old counters
// (driver.OldFenceKeys).
func (c Commands) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	return OKCounter(c.Run(ctx, SetNXFence(key, value, ttl, fenceKey)))
}

// RaiseFence runs driver.RaiseFenceScript.
func (c Commands) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return OK(c.Run(ctx, RaiseFence(key, value, fenceKey, token)))
}

// TTL runs driver.TTLScript: the key's PTTL if it holds value.
func (c Commands) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	return TTLHeld(c.Run(ctx, TTL(key, value)))
}

// ReleaseNotify runs driver.ReleaseNotifyScript, which publishes the release
// on driver.ReleaseChannel(key).
func (c Commands) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return OK(c.Run(ctx, ReleaseNotify(key, value)))
}

// ReleaseNotifyOn is ReleaseNotify with its channel given
// (drivernode.ChannelNotifier).
func (c Commands) ReleaseNotifyOn(ctx context.Context, key, value, channel string) (bool, error) {
	return OK(c.Run(ctx, ReleaseNotifyOn(key, value, channel)))
}
