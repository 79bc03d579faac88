package driver

import (
	"context"
	"time"
)

// Node is one independent Redis master, as the Redlock algorithm sees it.
//
// See the package documentation for the contract every method must keep.
type Node interface {
	// SetNX sets key to value with the given time to live, only if key does not
	// exist (SET key value NX PX ttl). It reports whether the key was set.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)

	// EvalRelease deletes key only if it holds value, atomically, by running
	// ReleaseScript. It reports whether the key was deleted.
	EvalRelease(ctx context.Context, key, value string) (bool, error)

	// Extend sets key's time to live to ttl only if key holds value, atomically,
	// by running ExtendScript. It reports whether the key was extended.
	Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error)

	// Close releases the node's resources. Calls after Close return an error.
	// Close may be called again, also concurrently: a Close that is not the
	// first does nothing more and returns nil (but for a node over a nil
	// client, whose every Close errs: see the package doc's checklist).
	Close() error
}

// Driver opens nodes by address. Drivers register themselves with
// redlock.Register under a name, usually from an init function.
type Driver interface {
	// Open returns a node for addr, in the driver's own address form: the
	// Redis drivers of this module take "host:port",
	// "redis://[user:password@]host:port[/db]" and rediss:// (the memory
	// driver takes any name). Open must not fail or block because the server
	// is unreachable: the node connects on use. It fails only when addr is
	// malformed, and its error must not contain the password.
	Open(addr string) (Node, error)
}
