// Package rediscmd encodes the commands that the Redis drivers send for the
// methods of driver.Node, driver.Fencer and driver.Notifier, and parses their
// replies, once for every driver: a driver's node embeds Commands, whose
// methods build a Cmd (SetNX, Release, Extend, SetNXFence, RaiseFence,
// ReleaseNotify) and hand it to the node's Run, which sends the command or
// script that Script, Keys and Args give with its client, and reads the reply
// with Parse.
package rediscmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/replyerr"
)

// Op is one of the commands a Redis node runs for the lock.
type Op uint8

// The commands: one per driver.Node, driver.Fencer and driver.Notifier
// method.
const (
	OpSetNX         Op = iota // SET Key Value NX PX TTL
	OpSetNXFence              // driver.SetNXFenceScript: Key, FenceKey; Value, TTL, driver.OldFenceKeys
	OpRelease                 // driver.ReleaseScript: Key; Value
	OpReleaseNotify           // driver.ReleaseNotifyScript: Key; Value, Channel or driver.ReleaseChannel(Key)
	OpExtend                  // driver.ExtendScript: Key; Value, TTL
	OpRaiseFence              // driver.RaiseFenceScript: Key, FenceKey; Value, Token
	OpTTL                     // driver.TTLScript: Key; Value
	OpSetNXAgain              // driver.SetNXAgainScript: Key, and FenceKey when set; Value, TTL, and driver.OldFenceKeys when FenceKey is set (see Cmd.Again)
)

var opNames = [...]string{
	OpSetNX:         "SET NX",
	OpSetNXFence:    "SET NX fence",
	OpRelease:       "release",
	OpReleaseNotify: "release",
	OpExtend:        "extend",
	OpRaiseFence:    "raise fence",
	OpTTL:           "TTL",
	OpSetNXAgain:    "SET NX again",
}

// String names the command in errors.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op " + strconv.Itoa(int(o))
}

// Cmd is one command for a node.
type Cmd struct {
	Op       Op
	Key      string
	Value    string // the lock value; never shown in an error
	FenceKey string // for SetNXFence, RaiseFence and the SetNXAgain of a SetNXFence
	TTL      time.Duration
	Token    uint64 // for RaiseFence
	// Channel is ReleaseNotify's channel, driver.ReleaseChannel(Key), when
	// the caller computed it once for all its nodes; "" has Args compute it.
	Channel string
}

// SetNX is driver.Node's SetNX: SET key value NX PX ttl.
func SetNX(key, value string, ttl time.Duration) Cmd {
	return Cmd{Op: OpSetNX, Key: key, Value: value, TTL: ttl}
}

// Release is driver.Node's EvalRelease: driver.ReleaseScript, which deletes
// key if it holds value.
func Release(key, value string) Cmd { return Cmd{Op: OpRelease, Key: key, Value: value} }

// Extend is driver.Node's Extend: driver.ExtendScript, which sets key's time
// to live to ttl if it holds value.
func Extend(key, value string, ttl time.Duration) Cmd {
	return Cmd{Op: OpExtend, Key: key, Value: value, TTL: ttl}
}

// SetNXFence is driver.Fencer's SetNXFence: driver.SetNXFenceScript, which is
// SET key value NX PX ttl and reads the counter at fenceKey in the same step.
func SetNXFence(key, value string, ttl time.Duration, fenceKey string) Cmd {
	return Cmd{Op: OpSetNXFence, Key: key, Value: value, TTL: ttl, FenceKey: fenceKey}
}

// RaiseFence is driver.Fencer's RaiseFence: driver.RaiseFenceScript.
func RaiseFence(key, value, fenceKey string, token uint64) Cmd {
	return Cmd{Op: OpRaiseFence, Key: key, Value: value, FenceKey: fenceKey, Token: token}
}

// ReleaseNotify is driver.Notifier's ReleaseNotify:
// driver.ReleaseNotifyScript, which also publishes the release on
// driver.ReleaseChannel(key).
func ReleaseNotify(key, value string) Cmd { return Cmd{Op: OpReleaseNotify, Key: key, Value: value} }

// ReleaseNotifyOn is ReleaseNotify with its channel, driver.ReleaseChannel(key),
// given by the caller (see drivernode.ChannelNotifier).
func ReleaseNotifyOn(key, value, channel string) Cmd {
	return Cmd{Op: OpReleaseNotify, Key: key, Value: value, Channel: channel}
}

// TTL is driver.TTLer's TTL: driver.TTLScript, which reads key's remaining
// time to live if it holds value.
func TTL(key, value string) Cmd { return Cmd{Op: OpTTL, Key: key, Value: value} }

// Result is what a command returned: OK for true (set, released, extended,
// raised, held), for SetNXFence the counter read, and for TTL the remaining
// time to live.
type Result struct {
	OK      bool
	Counter uint64
	TTL     time.Duration
}

// OK returns a command's outcome as a driver.Node method does: whether the
// command was applied, and the error of sending it.
func OK(r Result, err error) (bool, error) { return r.OK, err }

// TTLHeld returns a TTL command's outcome as driver.TTLer's TTL does.
func TTLHeld(r Result, err error) (time.Duration, bool, error) { return r.TTL, r.OK, err }

// OKCounter is OK with the counter, as driver.Fencer's SetNXFence returns it.
func OKCounter(r Result, err error) (bool, uint64, error) { return r.OK, r.Counter, err }

// Failed returns the error of a driver whose command failed with err: it
// names the driver and the command, and matches ctx's error when ctx is done
// (see driver.ContextError). A server's reply that echoes the command's
// arguments, the lock's value among them ("ERR unknown command 'SET', with
// args beginning with: 'key' 'VALUE' ...", from a server whose redis.conf
// renamed the command away), is cut before them (replyerr.Unechoed): the
// value lets its holder release the lock, and no error may show it.
func (c *Cmd) Failed(ctx context.Context, driverName string, err error) error {
	return fmt.Errorf("%s: %s: %w", driverName, c.Op, driver.ContextError(ctx, replyerr.Unechoed(err)))
}

// OnShard returns err, with which a cluster node's call on key failed,
// naming key's slot and, unless addr is "", the address of the primary that
// serves it as far as the node knows (a failover may have replaced it since),
// so that the error tells which shard failed:
// "slot 1234, primary 127.0.0.1:7002: ...".
func OnShard(key, addr string, err error) error {
	slot := driver.HashSlot(key)
	if addr == "" {
		return fmt.Errorf("slot %d: %w", slot, err)
	}
	return fmt.Errorf("slot %d, primary %s: %w", slot, addr, err)
}

// Again returns the command to send again, once, in c's place, after c's
// send failed because the server had closed or reset the connection before
// any reply came (a restart, CLIENT KILL, the server's idle timeout; see
// connalive.Broken), so that the server may or may not have run it: c itself
// for the scripts, and driver.SetNXAgainScript for a SET NX, plain or fenced.
//
// Why a second send is safe, and tells what the first did:
//   - SET NX: a plain second SET NX after a first that the server ran would
//     be refused by the key the first set, and the library reads a refusal as
//     "never set": no yes vote, and a SET that answers after the grant is not
//     released by Unlock when refused. SetNXAgainScript counts a key
//     that holds the lock's value as set: the value is random and unique to
//     the acquisition, so only the first send can have put it there, after
//     the attempt began, and the key's expiry, which the first send set, is
//     no earlier than the attempt's start plus the TTL, from which the
//     validity is counted. A key that holds another value is a refusal, as
//     the first send would have met it too; an absent key is set now. Its
//     fencing counter is read in the same step: only a holder of the key
//     raises it (RaiseFenceScript compares the value), and the key was ours
//     or nobody's between the two sends.
//   - extend, TTL, fence raise: they compare the lock's value first, and a
//     second run answers as the first would have (a second PEXPIRE restarts
//     the TTL from a later moment, which the Extend's validity, counted from
//     its start, does not rely on; a raise lifts the counter to the same
//     token, never twice).
//   - release: a second run after a first that applied finds the key gone;
//     Repeated reads that as no answer.
func (c *Cmd) Again() Cmd {
	switch c.Op {
	case OpSetNX, OpSetNXFence:
		a := *c
		a.Op = OpSetNXAgain
		if c.Op == OpSetNX {
			a.FenceKey = ""
		}
		return a
	}
	return *c
}

// Repeated returns the outcome of c sent again (as Again) after its
// first send failed with first: r and err, but for a release that deleted
// nothing, which the first send may have caused: first then, its outcome
// unknown, as a failed call's. When the repeat failed too, its error tells
// both, first's then the repeat's (errors.Is finds either): the repeat's
// alone (a refused dial, say) would hide why the call was sent again.
func (c *Cmd) Repeated(r Result, err, first error) (Result, error) {
	switch {
	case err == nil && !r.OK && (c.Op == OpRelease || c.Op == OpReleaseNotify):
		return Result{}, first
	case err != nil && first != nil:
		return r, fmt.Errorf("%w; sent again: %w", first, err)
	}
	return r, err
}

// Script returns the script the command runs, and false for SetNX, which is
// a plain SET.
func (c *Cmd) Script() (driver.Script, bool) {
	switch c.Op {
	case OpSetNXFence:
		return driver.SetNXFenceScript(), true
	case OpSetNXAgain:
		return driver.SetNXAgainScript(), true
	case OpRelease:
		return driver.ReleaseScript(), true
	case OpReleaseNotify:
		return driver.ReleaseNotifyScript(), true
	case OpExtend:
		return driver.ExtendScript(), true
	case OpRaiseFence:
		return driver.RaiseFenceScript(), true
	case OpTTL:
		return driver.TTLScript(), true
	}
	return driver.Script{}, false
}

// Keys returns the command's keys: the lock key, then for RaiseFence,
// SetNXFence and a fenced SetNXAgain the fencing counter.
func (c *Cmd) Keys() []string {
	keys, n := c.KeyArray()
	return keys[:n:n]
}

// KeyArray returns the command's keys as Keys does, by value: the first n of
// keys. A driver that passes them through a function value copies the array
// rather than a slice, which would escape to the heap.
func (c *Cmd) KeyArray() (keys [2]string, n int) {
	if c.fenced() {
		return [2]string{c.Key, c.FenceKey}, 2
	}
	return [2]string{c.Key}, 1
}

// fenced reports whether the command reads or writes the fencing counter
// FenceKey.
func (c *Cmd) fenced() bool {
	switch c.Op {
	case OpSetNXFence, OpRaiseFence:
		return true
	case OpSetNXAgain:
		return c.FenceKey != ""
	}
	return false
}

// Args returns the script's arguments (ARGV), or for SetNX the arguments of
// SET after the key: Value NX PX ms. A fenced SET NX's end with the old
// counters that its script reads as far as it may (driver.OldFenceKeys): not
// keys, which Redis would check against the user's ACL for writing.
func (c *Cmd) Args() []string {
	args, n := c.ArgArray()
	return args[:n:n]
}

// ArgArray returns the arguments as Args does, by value: the first n of
// args. A driver that passes them through a function value copies the
// array rather than a slice, which would escape to the heap: one allocation
// fewer per release (see KeyArray).
func (c *Cmd) ArgArray() (args [4]string, n int) {
	switch c.Op {
	case OpSetNX:
		return [4]string{c.Value, "NX", "PX", driver.MillisecondsString(c.TTL)}, 4
	case OpSetNXFence, OpSetNXAgain:
		args, n = [4]string{c.Value, driver.MillisecondsString(c.TTL)}, 2
		if c.fenced() {
			n += copy(args[n:], driver.OldFenceKeys(c.Key, c.FenceKey))
		}
		return args, n
	case OpExtend:
		return [4]string{c.Value, driver.MillisecondsString(c.TTL)}, 2
	case OpRaiseFence:
		return [4]string{c.Value, strconv.FormatUint(c.Token, 10)}, 2
	case OpReleaseNotify:
		ch := c.Channel
		if ch == "" {
			ch = driver.ReleaseChannel(c.Key)
		}
		return [4]string{c.Value, ch}, 2
	}
	return [4]string{c.Value}, 1
}

// Parse reads the command's reply, as a client decodes it: nil for a nil
// reply, a string or []byte for a status or bulk string, an int64 for an
// integer and []any for an array. Its errors show only the reply's shape: a
// lock value never appears in one.
func (c *Cmd) Parse(reply any) (Result, error) {
	switch c.Op {
	case OpSetNX:
		switch r := reply.(type) {
		case nil:
			return Result{}, nil // held
		case string:
			if r == "OK" {
				return Result{OK: true}, nil
			}
		case []byte:
			if string(r) == "OK" {
				return Result{OK: true}, nil
			}
		}
		return Result{}, fmt.Errorf("unexpected reply of type %T", reply)
	case OpSetNXFence, OpSetNXAgain:
		return parseFence(reply)
	case OpTTL:
		return parseTTL(reply)
	}
	// A type assertion, not a comparison of interfaces (a runtime call).
	if r, ok := reply.(int64); ok && (r == 0 || r == 1) {
		return Result{OK: r == 1}, nil
	}
	return Result{}, fmt.Errorf("unexpected script reply of type %T", reply)
}

// parseTTL reads TTLScript's PTTL, or -2 when the key does not hold the value.
func parseTTL(reply any) (Result, error) {
	ms, ok := reply.(int64)
	switch {
	case !ok:
		return Result{}, fmt.Errorf("unexpected script reply of type %T", reply)
	case ms == -2:
		return Result{}, nil
	case ms == -1:
		return Result{}, errors.New("the key holds the lock without a time to live (PTTL -1)")
	case ms < 0:
		return Result{}, fmt.Errorf("unexpected script reply %d", ms)
	}
	return Result{OK: true, TTL: time.Duration(ms) * time.Millisecond}, nil
}

// parseFence reads SetNXFenceScript's {1|0, counter}.
func parseFence(reply any) (Result, error) {
	a, ok := reply.([]any)
	if !ok || len(a) != 2 {
		return Result{}, fmt.Errorf("unexpected script reply of type %T", reply)
	}
	set, ok := a[0].(int64)
	if !ok || set != 0 && set != 1 {
		return Result{}, fmt.Errorf("unexpected script reply: first element of type %T", a[0])
	}
	var s string
	switch v := a[1].(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return Result{}, fmt.Errorf("unexpected script reply: counter of type %T", a[1])
	}
	counter, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return Result{}, errors.New("unexpected script reply: the counter is not a decimal uint64")
	}
	return Result{OK: set == 1, Counter: counter}, nil
}
