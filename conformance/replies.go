package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/replyerr"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The replies a lock's commands meet in production beyond OK, nil and
// integers, each made by a real redis-server in the state that gives it: a
// node that became a read-only replica (READONLY), a server out of memory
// (OOM), a key of another type (WRONGTYPE), a script that runs too long
// (BUSY), a dataset being loaded (LOADING), a user whose password changed
// while the node was connected (WRONGPASS). Every driver must give the same
// verdict on each: the server's error reply as an error, never as a
// verdict, wrapped so that driver.PermanentCode finds it (and says whether
// retrying can fix it), with the node working again once the server does.
// Each call is made twice: with a long context, and with redlock's default
// node timeout, with which a driver may send a lone call another way (see
// reconnectsRightAfterKillNodeTimeout).

// replyRounds bounds the rounds with the node timeout that may end by their
// deadline, which proves nothing (a loaded machine may take that long),
// before a check gives up.
const replyRounds = 5

// checkBounds runs round with ctx, and then with a context bounded by
// redlock.MaxNodeTimeout until a round does not end by its deadline (at most
// replyRounds), and fails the test with what judge says is wrong with each
// outcome, if anything. A round makes what it needs (a key, say) and its
// call, which alone gets the context it is given.
func checkBounds(t *testing.T, ctx context.Context, what string, round func(ctx context.Context) (bool, error), judge func(ok bool, err error) string) {
	t.Helper()
	if msg := judge(round(ctx)); msg != "" {
		t.Errorf("%s: %s", what, msg)
	}
	for range replyRounds {
		cctx, cancel := context.WithTimeout(ctx, redlock.MaxNodeTimeout)
		ok, err := round(cctx)
		ended := deadlinePassed(cctx)
		cancel()
		if err != nil && ended && errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if msg := judge(ok, err); msg != "" {
			t.Errorf("%s, alone with a %v deadline: %s", what, redlock.MaxNodeTimeout, msg)
		}
		return
	}
	t.Errorf("%s, alone with a %v deadline: %d rounds ended by their deadlines, none proved anything", what, redlock.MaxNodeTimeout, replyRounds)
}

// deadlinePassed reports whether ctx has ended or its deadline has passed:
// a call can end by a socket deadline set at the context's deadline before
// the context's timer has run (time.AfterFunc's cancel runs on a goroutine
// of its own), driver.ContextError then saying context.DeadlineExceeded
// already, while ctx.Err() is still nil.
func deadlinePassed(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// failsWith returns a judge for checkBounds: the call must fail with the
// server's error reply whose code is code in its error's chain, for which
// driver.PermanentCode is permanent ("" for a reply that retrying may fix).
func failsWith(code, permanent string) func(bool, error) string {
	return func(ok bool, err error) string {
		switch {
		case err == nil:
			return fmt.Sprintf("= %v, nil; want the server's %s reply as an error: a Node must never turn an error reply into a verdict", ok, code)
		case !replyerr.Find(err, func(msg string) bool { return strings.HasPrefix(msg, code+" ") }):
			return fmt.Sprintf("error = %v; want one with the server's %s reply in its chain (wrapped with %%w)", err, code)
		case driver.PermanentCode(err) != permanent:
			return fmt.Sprintf("error = %v, for which driver.PermanentCode is %q; want %q", err, driver.PermanentCode(err), permanent)
		}
		return ""
	}
}

// answers returns a judge for checkBounds: the call must answer want, and
// no error; rule says why.
func answers(want bool, rule string) func(bool, error) string {
	return func(ok bool, err error) string {
		if err != nil || ok != want {
			return fmt.Sprintf("= %v, %v; want %v: %s", ok, err, want, rule)
		}
		return ""
	}
}

// serverDo runs a command on srv and fails the test if it fails.
func serverDo(t *testing.T, ctx context.Context, srv *redistest.Server, args ...string) any {
	t.Helper()
	v, err := srv.Do(ctx, args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return v
}

// waitReply waits until srv answers PING with the error reply whose code is
// code (BUSY, LOADING), bounded by ctx.
func waitReply(t *testing.T, ctx context.Context, srv *redistest.Server, code string) {
	t.Helper()
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := srv.Do(pctx, "PING")
		cancel()
		if err != nil && strings.HasPrefix(err.Error(), code+" ") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the server did not answer %s to PING before the test's deadline (last: %v)", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldKey sets a fresh key through n with v and returns it.
func heldKey(t *testing.T, ctx context.Context, n driver.Node, v string) string {
	t.Helper()
	k := key(t)
	if ok := must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute)); !ok {
		t.Fatalf("SetNX(absent key) = false, want true")
	}
	return k
}

// releases checks that n releases k, which it holds with v: the node works
// again once the server does.
func releases(t *testing.T, ctx context.Context, n driver.Node, k, v, after string) {
	t.Helper()
	if ok, err := n.EvalRelease(ctx, k, v); err != nil || !ok {
		t.Errorf("EvalRelease of the node's own key %s = %v, %v; want true: a node must work again once its server does", after, ok, err)
	}
}

// setsFail checks SetNX of a fresh key, and SetNXFence for a driver.Fencer,
// with checkBounds and judge: the calls that write a key that is not there.
func setsFail(t *testing.T, ctx context.Context, n driver.Node, what string, judge func(bool, error) string) {
	t.Helper()
	checkBounds(t, ctx, "SetNX"+what, func(ctx context.Context) (bool, error) { return n.SetNX(ctx, key(t), value(), time.Minute) }, judge)
	if f, ok := n.(driver.Fencer); ok {
		checkBounds(t, ctx, "SetNXFence"+what, func(ctx context.Context) (bool, error) {
			k := key(t)
			ok, _, err := f.SetNXFence(ctx, k, value(), time.Minute, driver.FenceKey(k))
			return ok, err
		}, judge)
	}
}

func repliesReadOnly(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	v := value()
	held := heldKey(t, ctx, n, v)
	dead := deadAddr(t)
	serverDo(t, ctx, srv, "REPLICAOF", dead.Host, dead.Port) // a replica of no master that answers: read-only, its data kept
	const what = " on a node that became a read-only replica (REPLICAOF)"
	readOnly := failsWith("READONLY", "READONLY")
	setsFail(t, ctx, n, what, readOnly)
	checkBounds(t, ctx, "Extend of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.Extend(ctx, held, v, time.Minute) }, readOnly)
	checkBounds(t, ctx, "EvalRelease of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.EvalRelease(ctx, held, v) }, readOnly)
	serverDo(t, ctx, srv, "REPLICAOF", "NO", "ONE")
	releases(t, ctx, n, held, v, "once the node is a primary again (REPLICAOF NO ONE)")
}

func repliesOutOfMemory(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	v := value()
	held := heldKey(t, ctx, n, v)
	serverDo(t, ctx, srv, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	maxmemory := func(bytes string) { serverDo(t, ctx, srv, "CONFIG", "SET", "maxmemory", bytes) }
	maxmemory("1")
	defer maxmemory("0")
	const what = " on a server out of memory (maxmemory, noeviction)"
	oom := failsWith("OOM", "OOM")
	setsFail(t, ctx, n, what, oom)
	// Redis runs PEXPIRE and DEL (in a script too) out of memory: a lock's
	// holder extends and releases it still, and a release frees memory.
	const rule = "Redis runs the scripts' PEXPIRE and DEL out of memory, and a Node must let it"
	checkBounds(t, ctx, "Extend of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.Extend(ctx, held, v, time.Minute) }, answers(true, rule))
	long := ctx // the key's SET is no part of the round: a deadline there would fail the test
	checkBounds(t, ctx, "EvalRelease of the node's own key"+what, func(ctx context.Context) (bool, error) {
		maxmemory("0")
		k := heldKey(t, long, n, v)
		maxmemory("1")
		return n.EvalRelease(ctx, k, v)
	}, answers(true, rule))
	maxmemory("0")
	releases(t, ctx, n, held, v, "once the server has memory again")
}

func repliesWrongType(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.open(t, hostAddr(t, srv))
	k := key(t)
	serverDo(t, ctx, srv, "HSET", k, "field", "x")
	const what = " of a key that holds a hash"
	wrongType := failsWith("WRONGTYPE", "WRONGTYPE")
	checkBounds(t, ctx, "SetNX"+what, func(ctx context.Context) (bool, error) { return n.SetNX(ctx, k, value(), time.Minute) },
		answers(false, "SET NX finds the key: it is held, by something else"))
	checkBounds(t, ctx, "Extend"+what, func(ctx context.Context) (bool, error) { return n.Extend(ctx, k, value(), time.Minute) }, wrongType)
	checkBounds(t, ctx, "EvalRelease"+what, func(ctx context.Context) (bool, error) { return n.EvalRelease(ctx, k, value()) }, wrongType)
	if tl, ok := n.(driver.TTLer); ok {
		checkBounds(t, ctx, "TTL"+what, func(ctx context.Context) (bool, error) {
			_, ok, err := tl.TTL(ctx, k, value())
			return ok, err
		}, wrongType)
	}
	if got := serverDo(t, ctx, srv, "HGET", k, "field"); got != "x" {
		t.Errorf("the hash at the key after the calls: HGET = %v, want x: a Node must not touch a key that does not hold its value", got)
	}
}

func repliesBusy(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	serverDo(t, ctx, srv, "CONFIG", "SET", "lua-time-limit", "10") // busy-reply-threshold, in milliseconds
	repliesWhile(t, ctx, s, srv, "BUSY", " while a script runs too long", "once the script was killed (SCRIPT KILL)",
		[]string{"EVAL", "while true do end", "0"}, // until SCRIPT KILL
		func() { _, _ = srv.Do(ctx, "SCRIPT", "KILL") })
}

func repliesLoading(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithConfig("enable-debug-command", "yes"),
		redistest.WithConfig("loading-process-events-interval-bytes", "1024")) // answers LOADING while it loads
	serverDo(t, ctx, srv, "DEBUG", "POPULATE", "20000", "conformance-loading")
	serverDo(t, ctx, srv, "CONFIG", "SET", "key-load-delay", "500") // microseconds per key: ten seconds
	repliesWhile(t, ctx, s, srv, "LOADING", " while the server loads its dataset", "once the dataset is loaded",
		[]string{"DEBUG", "RELOAD"}, // saves, then loads again, the node's key too
		func() { _, _ = srv.Do(ctx, "CONFIG", "SET", "key-load-delay", "0") })
}

// repliesWhile opens a node on srv, and sends srv the command block from
// another connection, in the background: while it runs, srv answers every
// other command with the error reply whose code is code, which retrying may
// fix. SetNX, and Extend and EvalRelease of the node's own key, must fail
// with it (driver.PermanentCode ""); then end ends block, and the node must
// release its key (after). what says when the calls are made.
func repliesWhile(t *testing.T, ctx context.Context, s *redisSuite, srv *redistest.Server, code, what, after string, block []string, end func()) {
	t.Helper()
	n := s.open(t, hostAddr(t, srv))
	v := value()
	held := heldKey(t, ctx, n, v)
	ran := make(chan error, 1)
	go func() {
		_, err := srv.Do(ctx, block...)
		ran <- err
	}()
	ended := false
	finish := func() {
		if !ended {
			ended = true
			end()
			if err := <-ran; err != nil {
				t.Logf("%s: %v", block[0], err) // a killed script's error, say
			}
		}
	}
	defer finish()
	waitReply(t, ctx, srv, code)
	judge := failsWith(code, "")
	checkBounds(t, ctx, "SetNX"+what, func(ctx context.Context) (bool, error) { return n.SetNX(ctx, key(t), value(), time.Minute) }, judge)
	checkBounds(t, ctx, "Extend of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.Extend(ctx, held, v, time.Minute) }, judge)
	checkBounds(t, ctx, "EvalRelease of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.EvalRelease(ctx, held, v) }, judge)
	finish()
	releases(t, ctx, n, held, v, after)
}

func repliesPasswordChanged(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	const user = "locker"
	userPassword := "acl-" + password
	setPassword := func(pw string) {
		serverDo(t, ctx, srv, "ACL", "SETUSER", user, "on", "resetpass", ">"+pw, "~*", "&*", "+@all")
	}
	setPassword(userPassword)
	a := hostAddr(t, srv)
	a.Username, a.Password = user, userPassword
	n := s.open(t, a)
	v := value()
	held := heldKey(t, ctx, n, v)
	setPassword("changed-" + password)
	serverDo(t, ctx, srv, "CLIENT", "KILL", "USER", user)
	const what = " after the user's password changed and the server closed the node's connections"
	wrongPass := failsWith("WRONGPASS", "WRONGPASS")
	hides := func(judge func(bool, error) string) func(bool, error) string {
		return func(ok bool, err error) string {
			if err != nil {
				hidesPassword(t, "the error", err.Error(), v)
			}
			return judge(ok, err)
		}
	}
	checkBounds(t, ctx, "SetNX"+what, func(ctx context.Context) (bool, error) { return n.SetNX(ctx, key(t), v, time.Minute) }, hides(wrongPass))
	checkBounds(t, ctx, "EvalRelease of the node's own key"+what, func(ctx context.Context) (bool, error) { return n.EvalRelease(ctx, held, v) }, hides(wrongPass))
	setPassword(userPassword)
	releases(t, ctx, n, held, v, "once the user's password is the node's again")
}
