package batch

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Op is one of the commands a Redis node runs for the lock.
type Op uint8

// The commands: one per driver.Node, driver.Fencer and driver.Notifier
// method.
const (
	SetNX         Op = iota // SET Key Value NX PX TTL
	SetNXFence              // driver.SetNXFenceScript: Key, FenceKey; Value, TTL
	Release                 // driver.ReleaseScript: Key; Value
	ReleaseNotify           // driver.ReleaseNotifyScript: Key; Value
	Extend                  // driver.ExtendScript: Key; Value, TTL
	RaiseFence              // driver.RaiseFenceScript: Key, FenceKey; Value, Token
)

var opNames = [...]string{
	SetNX:         "SET NX",
	SetNXFence:    "SET NX fence",
	Release:       "release",
	ReleaseNotify: "release",
	Extend:        "extend",
	RaiseFence:    "raise fence",
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
	FenceKey string // for SetNXFence and RaiseFence
	TTL      time.Duration
	Token    uint64 // for RaiseFence
}

// Result is what a command returned: OK for true (set, released, extended,
// raised), and for SetNXFence the counter read.
type Result struct {
	OK      bool
	Counter uint64
}

// Script returns the script the command runs, or nil for SetNX, which is a
// plain SET.
func (c *Cmd) Script() *driver.Script {
	switch c.Op {
	case SetNXFence:
		return &driver.SetNXFenceScript
	case Release:
		return &driver.ReleaseScript
	case ReleaseNotify:
		return &driver.ReleaseNotifyScript
	case Extend:
		return &driver.ExtendScript
	case RaiseFence:
		return &driver.RaiseFenceScript
	}
	return nil
}

// Keys returns the command's keys: one, or two with the fencing counter.
func (c *Cmd) Keys() []string {
	if c.Op == SetNXFence || c.Op == RaiseFence {
		return []string{c.Key, c.FenceKey}
	}
	return []string{c.Key}
}

// Args returns the script's arguments (ARGV), or for SetNX the arguments of
// SET after the key: Value NX PX ms.
func (c *Cmd) Args() []any {
	switch c.Op {
	case SetNX:
		return []any{c.Value, "NX", "PX", driver.MillisecondsString(c.TTL)}
	case SetNXFence, Extend:
		return []any{c.Value, driver.MillisecondsString(c.TTL)}
	case RaiseFence:
		return []any{c.Value, strconv.FormatUint(c.Token, 10)}
	}
	return []any{c.Value}
}

// Parse reads the command's reply, as a client decodes it: nil for a nil
// reply, a string or []byte for a status or bulk string, an int64 for an
// integer and []any for an array. Its errors show only the reply's shape: a
// lock value never appears in one.
func (c *Cmd) Parse(reply any) (Result, error) {
	switch c.Op {
	case SetNX:
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
	case SetNXFence:
		return parseFence(reply)
	}
	switch reply {
	case int64(1):
		return Result{OK: true}, nil
	case int64(0):
		return Result{}, nil
	}
	return Result{}, fmt.Errorf("unexpected script reply of type %T", reply)
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
