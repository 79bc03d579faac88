// Package rueidiscore is the Redlock driver for the clients of the rueidis
// family, written once for all of them: rueidis (github.com/redis/rueidis)
// and its fork valkey-go (github.com/valkey-io/valkey-go), whose APIs are the
// same but for the names of their packages and types.
//
// The logic lives here: the node that creates its client in the background
// and replaces it when it loses its connection, the commands of package
// rediscmd sent over it (at most MaxInFlight at once, more for a far server,
// through a batch.Gate: the node is a driver.Queuer), the lane beside it that reads a
// lone call on the caller's goroutine (see lane), the fencing counters and
// the release notifications over one dedicated pub/sub connection. A driver package describes its client
// library with a [Library] (its types as type parameters, and the few calls
// whose types differ) and opens its nodes with [Open] and [New].
package rueidiscore

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
)

// Client is what the core calls on a client of the library (rueidis.Client,
// valkey.Client) directly: C is the client type itself and D its dedicated
// client type (rueidis.DedicatedClient, valkey.DedicatedClient).
type Client[C any, D Dedicated] interface {
	comparable
	// Nodes returns the client of each server it connects to, by address.
	Nodes() map[string]C
	// Dedicate returns a connection of the client's own and the function
	// that gives it back.
	Dedicate() (D, func())
	// Close closes the client.
	Close()
}

// Dedicated is what the core calls on a dedicated client directly.
type Dedicated interface {
	// Close closes the dedicated connection rather than give it back.
	Close()
}

// Result is a command's reply (rueidis.RedisResult, valkey.ValkeyResult).
type Result interface {
	// ToAny returns the reply decoded: nil, a string, an int64, []any...;
	// its error is the library's nil error for a nil reply.
	ToAny() (any, error)
	// ToString returns a string reply; its error is the library's nil
	// error for a nil reply. Unlike ToAny, it boxes nothing.
	ToString() (string, error)
	// Error returns the reply's error, if it is one, or the call's.
	Error() error
}

// Keys are the keys of a script, held by value, so that passing them to a
// Library's Exec, a function value, costs no allocation (a slice would escape
// to the heap).
type Keys struct {
	a [2]string
	n int
}

// Slice returns the keys.
func (k *Keys) Slice() []string { return k.a[:k.n] }

// Args are the arguments of a script (ARGV), held by value as Keys are, and
// for the same reason: a slice passed to a Library's Exec would escape to
// the heap, an allocation per release and per extension.
type Args struct {
	a [4]string
	n int
}

// Slice returns the arguments.
func (a *Args) Slice() []string { return a.a[:a.n] }

// Words are the words of a command (its name first), held by value as Keys
// are, and for the same reason: SET key value NX PX ms, or EVALSHA sha
// numkeys with a script's keys and arguments.
type Words struct {
	a [9]string
	n int
}

// Slice returns the words.
func (w *Words) Slice() []string { return w.a[:w.n] }

// add appends ws to the words.
func (w *Words) add(ws ...string) {
	w.n += copy(w.a[w.n:], ws)
}

// Hooks are the pub/sub callbacks a [Library]'s SetHooks installs on a
// dedicated connection.
type Hooks struct {
	// OnMessage is called for a message published on channel.
	OnMessage func(channel string)
	// OnSubscription is called for a confirmation of kind "ssubscribe",
	// "sunsubscribe" (or another the core ignores) of channel.
	OnSubscription func(kind, channel string)
}

// Options configure a client that [Open] creates. A Library's NewClient
// passes them to its ClientOption under the same names, and always sets
// these, which the core relies on:
//
//   - ForceSingleClient: one master, no CLUSTER probe (ForceSingleClient
//     also returns a client when it failed to connect: the core closes it),
//     unless Cluster is set;
//   - DisableCache: no client-side caching, no CLIENT TRACKING;
//   - DisableRetry: a retried SET NX could turn "applied" into "held by
//     another";
//   - AlwaysPipelining, unless Lane is set: a call returns as soon as its
//     context ends, and calls on the one connection never wait for each
//     other's replies (a lone call read on the caller's goroutine saves two
//     hand-offs, but serializes the calls that share its connection, and a
//     cancellation does not interrupt its read: that is what a node's lane
//     is for, see lane);
//   - PipelineMultiplex -1: one connection, made while the client is
//     created; the library would dial further ones in the goroutine of a
//     call, unbounded by its context (see node.dial).
type Options struct {
	InitAddress      []string
	Username         string
	Password         string
	SelectDB         int
	Dialer           net.Dialer
	TLSConfig        *tls.Config // for DialCtxFn, which does the handshake
	DialCtxFn        func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error)
	ConnWriteTimeout time.Duration
	// Cluster asks for a cluster client, whose InitAddress are seeds:
	// NewClient then sets ForceSingleClient false instead.
	Cluster bool
	// Lane asks for the client of a node's lane (see lane): NewClient then
	// sets AlwaysPipelining false instead, so that a call writes its
	// command and reads its reply on the caller's goroutine. Its
	// Dialer.KeepAlive is negative: no PING from a timer.
	Lane bool
}

// Library describes a client library of the rueidis family to the core: its
// client type C, dedicated client type D, result type R and script type L
// (*rueidis.Lua, *valkey.Lua), and the calls whose types differ from one
// library to another. Every field must be set.
// Use a Library by pointer, and never change it once used.
type Library[C Client[C, D], D Dedicated, R Result, L any] struct {
	// Name is the driver's name, as it is registered: it begins its errors
	// and the numbered names of nodes over clients that name no server.
	Name string
	// NewClient creates a client with opt (see [Options]).
	NewClient func(opt Options) (C, error)
	// Cluster reports whether c is a cluster client.
	Cluster func(c C) bool
	// Set sends SET key value NX PX ms on c.
	Set func(ctx context.Context, c C, key, value string, ms int64) R
	// Do sends the command args on c (INFO, CLUSTER SLOTS, PING...).
	Do func(ctx context.Context, c C, args ...string) R
	// NewScript returns the library's script for the Lua source src.
	NewScript func(src string) L
	// Exec runs s on c, by EVALSHA, and by EVAL when the server answers
	// NOSCRIPT (the library's Lua.Exec).
	Exec func(ctx context.Context, c C, s L, keys Keys, args Args) R
	// Send sends the command w on c, a client that is not a cluster client,
	// as it is: the library's Arbitrary, without Keys, so that it
	// computes no hash slot, which such a client never reads (the
	// library's builders compute one for every key: CRC16, the largest
	// part of building a command).
	Send func(ctx context.Context, c C, w Words) R
	// IsNoScript reports whether err is the server's NOSCRIPT reply.
	IsNoScript func(err error) bool
	// IsNil reports whether err is the library's error for a nil reply.
	IsNil func(err error) bool
	// IsReply reports whether err is, or wraps, an error reply of the
	// server's (the library's error type for them).
	IsReply func(err error) bool
	// ErrClosing is the library's error for a call on a closed client
	// (rueidis.ErrClosing, valkey.ErrClosing).
	ErrClosing error
	// SetHooks installs h on d as its pub/sub hooks, and returns the
	// channel that receives the error that ends the connection, or is
	// closed (the library's SetPubSubHooks).
	SetHooks func(d D, h Hooks) <-chan error
	// Subscribe sends SSUBSCRIBE for the channels on d.
	Subscribe func(ctx context.Context, d D, channels ...string) error
	// Unsubscribe sends SUNSUBSCRIBE for the channels on d.
	Unsubscribe func(ctx context.Context, d D, channels ...string) error

	once    sync.Once
	scripts map[string]L // by SHA1; see init
	unnamed *drivernode.Counter
	nilErr  error // of every call on a node from New(nil)
}

// init makes the library's scripts, one per script every node runs, and what
// else the core derives from the fields, on first use.
func (l *Library[C, D, R, L]) init() {
	l.once.Do(func() {
		l.scripts = make(map[string]L)
		for _, s := range []driver.Script{
			driver.ReleaseScript(), driver.ExtendScript(), driver.SetNXFenceScript(),
			driver.RaiseFenceScript(), driver.ReleaseNotifyScript(), driver.TTLScript(),
			driver.SetNXAgainScript(),
		} {
			l.scripts[s.SHA1()] = l.NewScript(s.Source())
		}
		l.unnamed = drivernode.NewCounter(l.Name)
		l.nilErr = drivernode.NilClientError(l.Name, "client")
	})
}
