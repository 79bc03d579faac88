package batch

import (
	"context"
	"time"
)

// Commands gives a driver's node the command methods of driver.Node,
// driver.Fencer and driver.Notifier, each one Cmd sent through Send. A node
// embeds it and adds Close, and Subscribe for driver.Notifier.
type Commands struct {
	// Send sends one command, typically through the node's Batcher, and
	// names the driver and the command in its error.
	Send func(ctx context.Context, cmd Cmd) (Result, error)
}

// SetNX runs SET key value NX PX ttl.
func (c Commands) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	r, err := c.Send(ctx, Cmd{Op: SetNX, Key: key, Value: value, TTL: ttl})
	return r.OK, err
}

// EvalRelease runs driver.ReleaseScript: DEL key if it holds value.
func (c Commands) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	r, err := c.Send(ctx, Cmd{Op: Release, Key: key, Value: value})
	return r.OK, err
}

// Extend runs driver.ExtendScript: PEXPIRE key ttl if it holds value.
func (c Commands) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	r, err := c.Send(ctx, Cmd{Op: Extend, Key: key, Value: value, TTL: ttl})
	return r.OK, err
}

// SetNXFence runs driver.SetNXFenceScript: SET key value NX PX ttl, and the
// counter at fenceKey read in the same step.
func (c Commands) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	r, err := c.Send(ctx, Cmd{Op: SetNXFence, Key: key, Value: value, TTL: ttl, FenceKey: fenceKey})
	return r.OK, r.Counter, err
}

// RaiseFence runs driver.RaiseFenceScript.
func (c Commands) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	r, err := c.Send(ctx, Cmd{Op: RaiseFence, Key: key, Value: value, FenceKey: fenceKey, Token: token})
	return r.OK, err
}

// ReleaseNotify runs driver.ReleaseNotifyScript, which publishes the release
// on driver.ReleaseChannel(key).
func (c Commands) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	r, err := c.Send(ctx, Cmd{Op: ReleaseNotify, Key: key, Value: value})
	return r.OK, err
}
