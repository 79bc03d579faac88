package conformance

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// stallBound is how long a call on a stalled server may take beyond its
// context: generous, since CI machines are slow and shared.
const stallBound = 2 * time.Second

// RunRedis proves a Redis driver: it runs Run on nodes that d opens on fresh
// redis-server processes (one per node, started with redistest), then checks
// what every Redis driver's Open must do: take host:port and
// redis://[user:password@]host:port[/db] addresses, never show a password,
// neither fail nor block when the server is down or stalled, bound every call
// by its context on a stalled server, and recover when the server does.
func RunRedis(t *testing.T, d driver.Driver) {
	t.Helper()
	t.Run("Node", func(t *testing.T) {
		Run(t, func(t *testing.T) driver.Node { return open(t, d, redistest.NewServer(t).Addr()) })
	})
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, d driver.Driver)
	}{
		{"Open/Password", openPassword},
		{"Open/Database", openDatabase},
		{"Open/MalformedHidesPassword", openMalformed},
		{"Down/NeitherFailsNorBlocks", downNeitherFailsNorBlocks},
		{"Stalled/DeadlineBoundsCalls", stalledDeadline},
		{"Stalled/CancelBoundsCalls", stalledCancel},
		{"Stalled/Recovers", stalledRecovers},
		{"Reconnects", reconnects},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), subtestTimeout)
			defer cancel()
			tc.fn(t, ctx, d)
		})
	}
}

// open opens addr with d and closes the node at the end of the test.
func open(t *testing.T, d driver.Driver, addr string) driver.Node {
	t.Helper()
	n, err := d.Open(addr)
	if err != nil {
		t.Fatalf("Open(%q) = %v", addr, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

const password = "pw-s3cret-never-shown"

// hidesPassword fails the test if text shows the password.
func hidesPassword(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, password) {
		t.Errorf("%s %q shows the password: a driver must never show one", what, text)
	}
}

func openPassword(t *testing.T, ctx context.Context, d driver.Driver) {
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	good := open(t, d, "redis://:"+password+"@"+srv.Addr())
	if s, ok := good.(interface{ String() string }); ok {
		hidesPassword(t, "String()", s.String())
	}
	k := key(t)
	if ok := must(t, "SetNX with the right password")(good.SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX with the right password = false, want true")
	}
	for _, addr := range []string{"redis://:wrong-" + password + "@" + srv.Addr(), srv.Addr()} {
		bad := open(t, d, addr)
		ok, err := bad.SetNX(ctx, key(t), value(), time.Minute)
		if err == nil {
			t.Fatalf("SetNX with a wrong or missing password = %v, nil; want an error", ok)
		}
		hidesPassword(t, "the error", err.Error())
	}
}

func openDatabase(t *testing.T, ctx context.Context, d driver.Driver) {
	srv := redistest.NewServer(t)
	k := key(t)
	db2 := open(t, d, "redis://"+srv.Addr()+"/2")
	must(t, "SetNX on /2")(db2.SetNX(ctx, k, value(), time.Minute))
	if ok := must(t, "SetNX on /2 again")(open(t, d, "redis://"+srv.Addr()+"/2").SetNX(ctx, k, value(), time.Minute)); ok {
		t.Fatal("SetNX on a key held in database 2, through another node on /2 = true, want false")
	}
	if ok := must(t, "SetNX on /0")(open(t, d, "redis://"+srv.Addr()+"/0").SetNX(ctx, k, value(), time.Minute)); !ok {
		t.Fatal("SetNX on database 0 of a key held only in database 2 = false, want true: redis://host:port/2 must select database 2")
	}
}

func openMalformed(t *testing.T, _ context.Context, d driver.Driver) {
	for _, addr := range []string{
		"", "127.0.0.1:0", "127.0.0.1:99999", "redis://:" + password + "@127.0.0.1:1/x",
		"redis://u:" + password + "@127.0.0.1:99999", "http://u:" + password + "@127.0.0.1:1",
	} {
		n, err := d.Open(addr)
		if err == nil {
			n.Close()
			t.Errorf("Open(%q) succeeded, want an error for a malformed address", addr)
			continue
		}
		hidesPassword(t, "Open's error", err.Error())
	}
}

// deadAddr returns a loopback address on which nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func downNeitherFailsNorBlocks(t *testing.T, ctx context.Context, d driver.Driver) {
	start := time.Now()
	n := open(t, d, deadAddr(t))
	if took := time.Since(start); took > stallBound {
		t.Fatalf("Open(address nobody listens on) took %v: Open must not connect", took)
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	for call, err := range calls(cctx, n, key(t)) {
		if err == nil {
			t.Errorf("%s on a down server: error = nil, want an error", call)
		}
	}
	if took := time.Since(start); took > 500*time.Millisecond+stallBound {
		t.Errorf("three calls on a down server with a 500ms deadline took %v", took)
	}
}

// stalled returns a paused server and a node opened on it before (warm: it
// has connected) or after the pause.
func stalled(t *testing.T, ctx context.Context, d driver.Driver, warm bool) (*redistest.Server, driver.Node) {
	t.Helper()
	srv := redistest.NewServer(t)
	var n driver.Node
	if warm {
		n = open(t, d, srv.Addr())
		must(t, "SetNX before the pause")(n.SetNX(ctx, key(t), value(), time.Minute))
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })
	if !warm {
		start := time.Now()
		n = open(t, d, srv.Addr())
		if took := time.Since(start); took > stallBound {
			t.Fatalf("Open(stalled server) took %v: Open must not connect", took)
		}
	}
	return srv, n
}

func stalledDeadline(t *testing.T, ctx context.Context, d driver.Driver) {
	const deadline = 200 * time.Millisecond
	for _, warm := range []bool{true, false} {
		_, n := stalled(t, ctx, d, warm)
		for name, call := range methods(n, key(t)) {
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, deadline)
			err := call(cctx)
			took := time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a stalled server (connected before: %v) with a %v deadline: error = %v, want one matching context.DeadlineExceeded", name, warm, deadline, err)
			}
			if took > deadline+stallBound {
				t.Errorf("%s on a stalled server (connected before: %v) with a %v deadline took %v: a call must end with its context", name, warm, deadline, took)
			}
		}
	}
}

func stalledCancel(t *testing.T, ctx context.Context, d driver.Driver) {
	const after = 200 * time.Millisecond
	for _, warm := range []bool{true, false} {
		_, n := stalled(t, ctx, d, warm)
		for name, call := range methods(n, key(t)) {
			start := time.Now()
			cctx, cancel := context.WithCancel(ctx) // no deadline: only the cancel can end it
			timer := time.AfterFunc(after, cancel)
			err := call(cctx)
			took := time.Since(start)
			timer.Stop()
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s on a stalled server (connected before: %v), canceled after %v: error = %v, want one matching context.Canceled", name, warm, after, err)
			}
			if took > after+stallBound {
				t.Errorf("%s on a stalled server (connected before: %v), canceled after %v, took %v: a call must end with its context", name, warm, after, took)
			}
		}
	}
}

func stalledRecovers(t *testing.T, ctx context.Context, d driver.Driver) {
	srv, n := stalled(t, ctx, d, true)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	calls(cctx, n, key(t))
	cancel()
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, n, key(t)) {
		t.Fatal("SetNX after the server resumed: still failing after 5s: a node must recover when its server does")
	}
}

// eventually reports whether SetNX on k succeeds within 5s of retries.
func eventually(ctx context.Context, n driver.Node, k string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		ok, err := n.SetNX(cctx, k, value(), time.Minute)
		cancel()
		if err == nil && ok {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func reconnects(t *testing.T, ctx context.Context, d driver.Driver) {
	srv := redistest.NewServer(t)
	n := open(t, d, srv.Addr())
	must(t, "SetNX before the connections are killed")(n.SetNX(ctx, key(t), value(), time.Minute))
	if _, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, n, key(t)) {
		t.Fatal("SetNX after the server closed every connection: still failing after 5s: a node must reconnect")
	}
}
