package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// scriptCommands run a script on the server, atomically.
var scriptCommands = map[string]bool{
	"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "fcall": true, "fcall_ro": true,
}

// connectionCommands are what a driver may send besides its lock commands:
// to connect and authenticate, check or name a connection, learn about the
// server, load scripts, and listen for releases. None reads or writes a key.
var connectionCommands = map[string]bool{
	"auth": true, "hello": true, "select": true, "ping": true, "echo": true, "info": true,
	"readonly": true, "readwrite": true, "quit": true, "reset": true, "command": true,
	"script|load": true, "script|exists": true,
	"ssubscribe": true, "sunsubscribe": true, "subscribe": true, "unsubscribe": true,
	"psubscribe": true, "punsubscribe": true,
}

// isSetNXPX reports whether c is SET with NX and PX: SetNX's one command.
func isSetNXPX(c monitored) bool {
	if c.name() != "set" || len(c.args) < 4 {
		return false
	}
	var nx, px bool
	for _, a := range c.args[3:] {
		switch strings.ToUpper(a) {
		case "NX":
			nx = true
		case "PX":
			px = true
		}
	}
	return nx && px
}

// allowedFromClient reports whether a driver may send c itself: a
// connection command, SET NX PX, or a script.
func allowedFromClient(c monitored) bool {
	name := c.name()
	return connectionCommands[name] || scriptCommands[name] || isSetNXPX(c) ||
		strings.HasPrefix(name, "client|") || strings.HasPrefix(name, "cluster|") || strings.HasPrefix(name, "command|")
}

// transactionCommands make or guard a MULTI/EXEC transaction, which a
// driver must not send (see commandsAtomic).
var transactionCommands = map[string]bool{
	"multi": true, "exec": true, "discard": true, "watch": true, "unwatch": true,
}

// keyCommands returns the commands in cmds, what the server ran for one
// method call, that read or write a key: SET NX PX, and each script that ran
// a command of its own (the lua commands that follow it). A script that ran
// none, as an EVALSHA the server answered with NOSCRIPT, touched no key, so
// EVALSHA then EVAL counts once.
func keyCommands(cmds []monitored) []monitored {
	var keyed []monitored
	for i, c := range cmds {
		switch {
		case c.lua:
		case isSetNXPX(c):
			keyed = append(keyed, c)
		case scriptCommands[c.name()] && i+1 < len(cmds) && cmds[i+1].lua:
			keyed = append(keyed, c)
		}
	}
	return keyed
}

// commandsAtomic watches, with MONITOR, the commands a node sends for each
// of its methods: a lock command must be ONE atomic command on the server,
// SET key value NX PX ms for SetNX and one script (EVALSHA, falling back to
// EVAL after NOSCRIPT) for the others. A driver that sent SETNX then
// PEXPIRE, or GET, compare, then DEL, would pass every test of results and
// leave a key that never expires, or delete another holder's key, when a
// crash or another client comes between its commands; so would one that
// split the compare and the DEL over two scripts. So each call may run at
// most one command that touches a key (a script counts once, with the
// commands it runs), and the client may send nothing else that touches
// one. MULTI/EXEC is not allowed (see its message below). Commands that
// touch no key (AUTH, HELLO, CLIENT, SCRIPT LOAD, PING, SSUBSCRIBE, ...)
// are allowed. It runs each method on a server with no script loaded, then
// again.
func commandsAtomic(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	atomicOn(t, ctx, srv, func() driver.Node { return s.open(t, hostAddr(t, srv)) })
}

// clusterCommandsAtomic is commandsAtomic on a cluster node: the node is
// opened on a cluster of one shard, whose primary serves every slot and is
// watched. The cluster client's own questions (CLUSTER SLOTS, CLUSTER
// SHARDS, ...) touch no key and are allowed.
func clusterCommandsAtomic(t *testing.T, ctx context.Context, s *redisSuite) {
	c := redistest.NewCluster(t, 1)
	atomicOn(t, ctx, c.Shards()[0].Primary(), func() driver.Node { return s.openURL(t, c.URL()) })
}

// atomicOn runs commandsAtomic's checks on the node that open opens, while
// srv, the one server that node sends its commands to, is watched.
func atomicOn(t *testing.T, ctx context.Context, srv *redistest.Server, open func() driver.Node) {
	mon, err := newMonitor(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	n := open()
	fencer, _ := n.(driver.Fencer)
	notifier, _ := n.(driver.Notifier)
	ttler, _ := n.(driver.TTLer)
	type step struct {
		call  string
		locks bool // the call must run a lock command (SET NX PX or a script)
		run   func() error
	}
	check := func(call string, want bool) func(bool, error) error {
		return func(got bool, err error) error {
			if err == nil && got != want {
				t.Errorf("%s = %v, want %v", call, got, want)
			}
			return err
		}
	}
	for round := range 2 {
		k, k2, v := key(t), key(t), value()
		fk := driver.FenceKey(k)
		steps := []step{
			{"SetNX(absent key)", true, func() error { return check("SetNX(absent key)", true)(n.SetNX(ctx, k, v, time.Minute)) }},
			{"Extend(value)", true, func() error { return check("Extend(value)", true)(n.Extend(ctx, k, v, time.Minute)) }},
			{"Extend(otherValue)", true, func() error { return check("Extend(otherValue)", false)(n.Extend(ctx, k, value(), time.Minute)) }},
			{"EvalRelease(otherValue)", true, func() error { return check("EvalRelease(otherValue)", false)(n.EvalRelease(ctx, k, value())) }},
		}
		if ttler != nil {
			steps = append(steps, step{"TTL(value)", true, func() error {
				_, held, err := ttler.TTL(ctx, k, v)
				return check("TTL(value) held", true)(held, err)
			}})
		}
		if fencer != nil {
			steps = append(steps, step{"RaiseFence(value)", true, func() error {
				return check("RaiseFence(value)", true)(fencer.RaiseFence(ctx, k, v, fk, 3))
			}})
		}
		steps = append(steps, step{"EvalRelease(value)", true, func() error { return check("EvalRelease(value)", true)(n.EvalRelease(ctx, k, v)) }})
		if fencer != nil {
			steps = append(steps, step{"SetNXFence(absent key)", true, func() error {
				ok, _, err := fencer.SetNXFence(ctx, k, v, time.Minute, fk)
				return check("SetNXFence(absent key)", true)(ok, err)
			}})
		}
		if notifier != nil {
			steps = append(steps,
				step{"Subscribe", false, func() error {
					stop, err := notifier.Subscribe(ctx, k2, make(chan struct{}, 1))
					if err == nil {
						stop()
					}
					return err
				}},
				step{"SetNX(absent key)", true, func() error { return check("SetNX(absent key)", true)(n.SetNX(ctx, k2, v, time.Minute)) }},
				step{"ReleaseNotify(value)", true, func() error { return check("ReleaseNotify(value)", true)(notifier.ReleaseNotify(ctx, k2, v)) }},
			)
		}
		when := []string{"no script loaded", "scripts loaded"}[round]
		for _, st := range steps {
			if err := st.run(); err != nil {
				t.Fatalf("%s (%s): unexpected error %v", st.call, when, err)
			}
			cmds, err := mon.sync(ctx)
			if err != nil {
				t.Fatalf("MONITOR: %v", err)
			}
			var sent, tx []monitored // what the client must not send
			for _, c := range cmds {
				switch {
				case c.lua:
				case transactionCommands[c.name()]:
					tx = append(tx, c)
				case !allowedFromClient(c):
					sent = append(sent, c)
				}
			}
			keyed := keyCommands(cmds)
			switch {
			case len(tx) > 0:
				t.Errorf("%s (%s) sent a MULTI/EXEC transaction (%s): MULTI/EXEC is not allowed; a Node must send each lock command on its own, SET key value NX PX ms for SetNX and one of the package's scripts for the others. A transaction cannot make one command depend on another's reply (a compare before DEL or PEXPIRE needs a script), and around the one SET NX PX it adds nothing",
					st.call, when, commandList(cmds))
			case len(sent) > 0:
				t.Errorf("%s (%s) sent %s from the client: a Node must run every lock command as one atomic command on the server, SET key value NX PX ms for SetNX and the package's scripts (EVALSHA, falling back to EVAL) for the others; SETNX then PEXPIRE, or GET, compare, then DEL, is not atomic",
					st.call, when, commandList(sent))
			case len(keyed) > 1:
				t.Errorf("%s (%s) ran %d commands on keys, not one (it sent %s): a Node must run every lock command as ONE atomic command on the server, SET key value NX PX ms for SetNX and one of the package's scripts (EVALSHA, falling back to EVAL after NOSCRIPT) for the others; a compare on the client between two scripts (GET, then DEL or PEXPIRE) is no more atomic than between two commands",
					st.call, when, len(keyed), commandList(cmds))
			case st.locks && len(keyed) == 0:
				t.Errorf("%s (%s) ran neither SET NX PX nor a script (it sent %s): a Node must run every lock command as one atomic command on the server", st.call, when, commandList(cmds))
			}
		}
	}
}
