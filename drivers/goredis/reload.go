package goredis

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// reloadEvery bounds how often a cluster node asks go-redis to reload the
// slot map after failed commands (see reloader).
const reloadEvery = 200 * time.Millisecond

// reloader has a *redis.ClusterClient reload its slot map, in the
// background, when a command failed in a way that may mean that the shard's
// primary is gone: a failover promotes a replica, and the slot map must name
// it before a command can reach it. go-redis learns a new map by itself only
// when a command meets MOVED, when it resends a command to another node
// (which the node's commands forbid: see noRetry), or every
// ClusterStateReloadInterval (a minute by default): a dead primary answers
// nothing, and without the reload its slots would fail for that minute after
// the replica took over. The failed command itself is never resent: its
// outcome is unknown.
type reloader struct {
	reload func() // starts the reload: the client's ReloadState
	// base is the origin of last: durations since it are read on the
	// monotonic clock, which a step of the wall clock does not move.
	base time.Time
	last atomic.Int64 // when the last reload was asked for, in nanoseconds since base
}

// failed asks for a reload if err calls for one and none was asked for in
// the last reloadEvery. ReloadState only starts the reload, which go-redis
// makes in its own goroutine (and coalesces with one in progress). go-redis
// waits 200ms only after a reload that succeeded: one that fails (every
// seed down) ends at once, so without this limit a cluster that is down
// would get a reload, and its dials, for every failed command.
func (r *reloader) failed(err error) {
	if r == nil || !needsReload(err) {
		return
	}
	now := int64(time.Since(r.base)) + int64(reloadEvery) // the first is never too soon
	last := r.last.Load()
	if now-last < int64(reloadEvery) || !r.last.CompareAndSwap(last, now) {
		return
	}
	r.reload()
}

// newReloader returns the reloader of c.
func newReloader(c *redis.ClusterClient) *reloader {
	return reloaderOf(func() { c.ReloadState(context.Background()) })
}

// reloaderOf returns a reloader that calls reload, its time counted from
// now.
func reloaderOf(reload func()) *reloader {
	return &reloader{reload: reload, base: time.Now()}
}

// needsReload reports whether err, a command's error, may mean that the
// slot map is out of date: a network error or a timeout on the way to the
// shard (its primary may be dead or cut off, and replaced), or the
// server's CLUSTERDOWN (a shard lost its primary). A reply of the server
// otherwise says nothing of the map, nor does a caller's cancellation.
func needsReload(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return strings.HasPrefix(re.Error(), "CLUSTERDOWN")
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}
