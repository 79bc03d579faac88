package redigo

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/redistest"
)

// A pipeline (several calls at once) whose pooled connection the server
// closed after it had answered goes again on a live one, as a lone call
// does (TestCallsAfterServerClosedPooledConnections): its scripts, and its
// SET NX as driver.SetNXAgainScript, which sets a free key, counts a key
// that holds the call's value (what a first send that the server ran before
// closing leaves) as set, leaving its time to live as the first send set
// it (as driver.SetNXAgainScript's doc says), and refuses a key that holds
// another value.
func TestPipelineOnStaleConnectionRepeated(t *testing.T) {
	n, srv, ctx := killedAfterSet(t)
	if _, err := srv.Do(ctx, "SET", "mine", "v", "PX", "30000"); err != nil { // as a first send would have
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", "theirs", "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", "{fenced}:fence", "5"); err != nil {
		t.Fatal(err)
	}
	calls := []*batch.Call[rediscmd.Cmd, rediscmd.Result]{
		{Cmd: rediscmd.Release("a", "v")},
		{Cmd: rediscmd.SetNX("b", "v", time.Minute)},
		{Cmd: rediscmd.SetNX("mine", "v", time.Minute)},
		{Cmd: rediscmd.SetNX("theirs", "v", time.Minute)},
		{Cmd: rediscmd.SetNXFence("fenced", "v", time.Minute, "{fenced}:fence")},
	}
	n.exec(ctx, calls)
	want := []rediscmd.Result{{OK: true}, {OK: true}, {OK: true}, {}, {OK: true, Counter: 5}}
	for i, c := range calls {
		if c.Err != nil || c.Res != want[i] {
			t.Errorf("%s %s in the pipeline right after the kill: %+v, %v; want %+v", c.Cmd.Op, c.Cmd.Key, c.Res, c.Err, want[i])
		}
	}
	if c := calls[1]; c.Cmd.Op != rediscmd.OpSetNX {
		t.Errorf("the call's command after the repeat: %s, want the caller's %s", c.Cmd.Op, rediscmd.OpSetNX)
	}
	for key, value := range map[string]string{"b": "v", "mine": "v", "theirs": "w", "fenced": "v"} {
		if got, err := srv.Do(ctx, "GET", key); err != nil || got != value {
			t.Errorf("GET %s = %v, %v; want %q", key, got, err, value)
		}
	}
	// The key the first send set keeps that send's expiry: 30s from then,
	// not the repeat's minute (PTTL in ms; the bound is generous, the
	// machine is shared).
	if got, err := srv.Do(ctx, "PTTL", "mine"); err != nil {
		t.Error(err)
	} else if ms, ok := got.(int64); !ok || ms <= 0 || ms > 30000 {
		t.Errorf("PTTL mine after the repeat = %v; want the first send's (0, 30000]", got)
	}
}

// A release sent again after its first send failed on a stale connection
// that deletes nothing is no answer: the first may have deleted the key.
func TestRepeatedReleaseDeletingNothingIsNoAnswer(t *testing.T) {
	n, _, ctx := killedAfterSet(t)
	calls := []*batch.Call[rediscmd.Cmd, rediscmd.Result]{
		{Cmd: rediscmd.Release("gone", "v")},
		{Cmd: rediscmd.Release("a", "v")},
	}
	n.exec(ctx, calls)
	if c := calls[0]; c.Err == nil {
		t.Errorf("a release of a key that is not there, sent again after a stale connection: %+v, no error; want the first send's error", c.Res)
	}
	if c := calls[1]; c.Err != nil || !c.Res.OK {
		t.Errorf("a release of a key that is there, sent again after a stale connection: %+v, %v; want it released", c.Res, c.Err)
	}
}

// killedAfterSet returns an Open node of a new server whose pooled
// connection set "a" to "v" and was then closed by the server (CLIENT
// KILL), the server, and a context of a minute.
func killedAfterSet(t *testing.T) (*node, *redistest.Server, context.Context) {
	t.Helper()
	srv := redistest.NewServer(t)
	d, err := open(srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := d.(*node)
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	if ok, err := n.SetNX(ctx, "a", "v", time.Minute); err != nil || !ok {
		t.Fatalf("SetNX before the kill: %v, %v", ok, err)
	}
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	return n, srv, ctx
}

// Only a connection error (EOF, a reset) on a connection that had answered
// before is stale, and repeated: not one on a new connection, not a timeout,
// a context's end or an error reply.
func TestStaleOnlyForConnectionErrors(t *testing.T) {
	c := &conn{}
	if _, err := c.result(nil, errEOFLike{}); isStale(err) {
		t.Error("a connection error on a connection that never answered is stale")
	}
	c.answered.Store(true)
	if _, err := c.result(nil, errEOFLike{}); !isStale(err) {
		t.Error("EOF on a connection that had answered is not stale")
	}
	if _, err := c.result(nil, timeoutErr{}); isStale(err) {
		t.Error("a timeout is stale")
	}
	if _, err := c.result(nil, context.DeadlineExceeded); isStale(err) {
		t.Error("a context's end is stale")
	}
	if _, err := c.result(nil, redis.Error("ERR wrong")); isStale(err) {
		t.Error("an error reply is stale")
	}
	c.answered.Store(false)
	if c.result(nil, redis.Error("NOSCRIPT")); !c.answered.Load() {
		t.Error("an error reply is no answer")
	}
}

type errEOFLike struct{}

func (errEOFLike) Error() string { return "EOF" }
func (errEOFLike) Unwrap() error { return io.EOF }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
