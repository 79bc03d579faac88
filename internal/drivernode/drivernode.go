// Package drivernode holds what the nodes of every driver do alike: the name
// by which a node is shown in errors and by fmt, which never contains a
// password; the names of nodes over clients of several servers, by their
// addresses (Servers), and the numbered names of nodes over clients whose
// addresses cannot be learned; and the check and error for a node made over a nil client, which
// must fail its calls rather than panic.
//
// A driver's node embeds a [Name] for its String and Format methods, and
// keeps a [State] for the error of a call on a node without a client or
// closed.
package drivernode

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// Name is a node's name: the address it connects to with credentials
// removed, or a numbered name from a [Counter]. Embedded in a node, it gives
// the node its String and Format methods.
type Name string

// String returns the name.
func (n Name) String() string { return string(n) }

// Format writes the name whatever the verb, so that no verb (%#v, %d, ...)
// prints the fields of the node that embeds it, which may hold a password.
func (n Name) Format(f fmt.State, _ rune) { io.WriteString(f, string(n)) }

// MaxServersNamed is how many addresses a [Servers] name lists at most.
const MaxServersNamed = 8

// Servers names a node over a client of several servers (a go-redis Ring, a
// rueidis cluster client) by what it connects to: "kind(a,b,...)", the
// addresses sorted and each given once, without credentials (a user name
// too: whatever comes before an "@"), at most MaxServersNamed of them and
// then "+N" for the N others. Two processes, or one process whenever it makes
// such a node again, name the same servers alike, so that a metric's series
// per node stays bounded; two nodes over the same servers have one name,
// which redlock.New refuses as a node given twice. Servers returns "" when
// addrs is empty.
func Servers(kind string, addrs []string) Name {
	seen := make([]string, 0, len(addrs))
	for _, a := range addrs {
		scheme, rest := "", a
		if i := strings.Index(a, "://"); i >= 0 {
			scheme, rest = a[:i+3], a[i+3:]
		}
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = rest[at+1:]
		}
		if rest != "" {
			seen = append(seen, redisaddr.Redact(scheme+rest))
		}
	}
	if len(seen) == 0 {
		return ""
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)
	more := ""
	if len(seen) > MaxServersNamed {
		more = ",+" + strconv.Itoa(len(seen)-MaxServersNamed)
		seen = seen[:MaxServersNamed]
	}
	return Name(kind + "(" + strings.Join(seen, ",") + more + ")")
}

// Counter names the nodes of one driver that have no address to be named by:
// "prefix-1", "prefix-2", ..., so that redlock.New tells them apart. Its zero
// value is not usable: use NewCounter. It is safe for concurrent use.
type Counter struct {
	prefix string
	n      atomic.Int64
}

// NewCounter returns a Counter whose names begin with prefix and a dash.
func NewCounter(prefix string) *Counter { return &Counter{prefix: prefix + "-"} }

// Next returns a name no earlier call returned.
func (c *Counter) Next() Name { return Name(c.prefix + strconv.FormatInt(c.n.Add(1), 10)) }

// IsNil reports whether client, given to a driver's constructor, is nil or a
// nil pointer in an interface.
func IsNil(client any) bool {
	v := reflect.ValueOf(client)
	return !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil()
}

// State is whether a node can be used: never when it was made over a nil
// client, no more once it is closed. Its zero value is the state of an open
// node that has a client. It is safe for concurrent use.
type State struct {
	nilClient error
	closed    atomic.Bool
}

// SetNilClient makes s the state of a node that driverName's New made over
// a nil client, which it names what (see NilClientError). Call it before the
// node is used.
func (s *State) SetNilClient(driverName, what string) {
	s.nilClient = NilClientError(driverName, what)
}

// Err returns the error of a call on the node: the nil-client error,
// driver.ErrClosed once Close was called, or nil when the node can be used.
func (s *State) Err() error {
	switch {
	case s.nilClient != nil:
		return s.nilClient
	case s.closed.Load():
		return driver.ErrClosed
	}
	return nil
}

// Close marks the node closed. It reports whether this was the first Close,
// after which the node must release its resources; the error, for a node
// over a nil client, is the one its Close returns.
func (s *State) Close() (first bool, err error) {
	if s.nilClient != nil {
		return false, s.nilClient
	}
	return !s.closed.Swap(true), nil
}

// NilClientError returns the error of every call, and of Close, on a node
// that driverName's New made over a nil client, which it names what (such as
// "client" or "pool").
// It matches driver.ErrNilClient, which retrying cannot fix.
func NilClientError(driverName, what string) error {
	return nilClientError{fmt.Sprintf("%s: New was given a nil %s", driverName, what)}
}

// nilClientError is NilClientError's error: its text, and errors.Is matches
// driver.ErrNilClient.
type nilClientError struct{ msg string }

func (e nilClientError) Error() string { return e.msg }

func (e nilClientError) Is(target error) bool { return target == driver.ErrNilClient }

// ChannelNotifier is implemented by the nodes of this module's Redis drivers
// beside driver.Notifier: ReleaseNotifyOn is ReleaseNotify with the channel,
// driver.ReleaseChannel(key), given by the caller, who computes it once for
// all the nodes of a release rather than each node once per call.
type ChannelNotifier interface {
	ReleaseNotifyOn(ctx context.Context, key, value, channel string) (bool, error)
}

// Warmer is implemented by the nodes of this module's Redis drivers whose
// first calls may need more connections at once than the one an earlier
// call left in their pool (goredis's, from Open). Warm makes those
// connections, bounded by ctx and by the node's Close, and leaves them idle
// in the pool, so that the calls that follow take them instead of dialing
// within their own deadlines. redlock.Client.Connect calls it after a
// node's identity question; its error is no node's failure (a call dials
// as it would have). Nodes that keep one connection (rueidis, valkeygo), or
// whose first call needs no more than one, do not implement it.
type Warmer interface {
	Warm(ctx context.Context) error
}
