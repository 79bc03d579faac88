package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// lockEnds records the LockEnd events of a Client.
type lockEnds struct {
	redlock.NopObserver
	mu   sync.Mutex
	ends []redlock.LockEnd
}

func (o *lockEnds) LockEnd(_ context.Context, e redlock.LockEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends = append(o.ends, e)
}

// only returns the one LockEnd o saw, failing t when it saw another count.
func (o *lockEnds) only(t *testing.T) redlock.LockEnd {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.ends) != 1 {
		t.Fatalf("LockEnd seen %d times, want once: %+v", len(o.ends), o.ends)
	}
	return o.ends[0]
}

// lostLine returns the line of out that warns "redlock: lock lost".
func lostLine(t *testing.T, out string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if strings.Contains(line, `level=WARN msg="redlock: lock lost"`) {
			return line
		}
	}
	t.Fatalf("no Warn \"redlock: lock lost\" in the log:\n%s", out)
	return ""
}

// A lock held through Do and lost at an extension, because a majority's key
// was deleted or because a majority's nodes fail: the LockEnd event says why
// (Err: the extension's error, the nodes' errors in it), and WithLogger's
// Warn "redlock: lock lost", the one record a team logging at Info sees,
// carries it as "err". Before, the Warn said how the lock was lost (key,
// how, held) and never why: the nodes' errors were only in Debug records.
func TestLockLostSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(mem []*memory.Node)
		// check checks the cause in LockEnd.Err and the Warn's text.
		check func(t *testing.T, e redlock.LockEnd, line string)
	}{
		{"majority deleted", func(mem []*memory.Node) {
			mem[0].Delete("k")
			mem[1].Delete("k")
		}, func(t *testing.T, e redlock.LockEnd, line string) {
			if e.How != redlock.EndLostExtend {
				t.Errorf("LockEnd.How = %q, want %q", e.How, redlock.EndLostExtend)
			}
			var ve *redlock.VoteError
			if !errors.Is(e.Err, redlock.ErrLockLost) || !errors.As(e.Err, &ve) || ve.Refused < 2 {
				t.Errorf("LockEnd.Err = %v, want ErrLockLost and a VoteError of 2 or more refusals", e.Err)
			}
			if !strings.Contains(line, "err=") || !strings.Contains(line, "refused") {
				t.Errorf("the Warn does not say why: %s", line)
			}
		}},
		{"majority down", func(mem []*memory.Node) {
			mem[0].SetDown(true)
			mem[1].SetDown(true)
		}, func(t *testing.T, e redlock.LockEnd, line string) {
			var ne *redlock.NodeError
			if !errors.Is(e.Err, memory.ErrDown) || !errors.As(e.Err, &ne) || !errors.Is(e.Err, redlock.ErrUnavailable) {
				t.Errorf("LockEnd.Err = %v, want a *NodeError of memory.ErrDown and ErrUnavailable", e.Err)
			}
			if !strings.Contains(line, "err=") || !strings.Contains(line, memory.ErrDown.Error()) {
				t.Errorf("the Warn does not say why: %s", line)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out syncbuf.Buffer
				ends := &lockEnds{}
				mem, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(9*time.Second), redlock.WithObserver(ends),
					redlock.WithLogger(slog.New(slog.NewTextHandler(&out, nil)))) // Info
				err := c.Do(t.Context(), "k", func(ctx context.Context) error {
					synctest.Wait() // every SET landed: the last may follow the grant
					tc.lose(mem)
					select {
					case <-ctx.Done():
					case <-time.After(time.Minute):
						t.Error("fn's context was not canceled when the lock was lost")
					}
					return context.Cause(ctx)
				})
				if !errors.Is(err, redlock.ErrLockLost) {
					t.Fatalf("Do = %v, want ErrLockLost", err)
				}
				e := ends.only(t)
				if !e.Lost() {
					t.Fatalf("LockEnd.How = %q, want a loss", e.How)
				}
				line := lostLine(t, out.String())
				t.Log(line)
				tc.check(t, e, line)
			})
		})
	}
}

// LockEnd.Err at the other ends of a lock's life: nil for Unlock and for an
// expiry with no call failing; Unlock's error for a loss Unlock found;
// Lock.TTL's for a loss TTL found; the last Extend's, which failed, for an
// expiry that Done's timer noticed.
func TestLockEndErr(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, mem []*memory.Node, l *redlock.Lock) error // returns the error LockEnd.Err must be
		how  string
	}{
		{"unlocked", func(t *testing.T, _ []*memory.Node, l *redlock.Lock) error {
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatalf("Unlock = %v", err)
			}
			return nil
		}, redlock.EndUnlocked},
		{"expired unextended", func(t *testing.T, _ []*memory.Node, l *redlock.Lock) error {
			<-l.Done()
			return nil
		}, redlock.EndExpired},
		{"lost at unlock", func(t *testing.T, mem []*memory.Node, l *redlock.Lock) error {
			mem[0].Delete("k")
			mem[1].Delete("k")
			return l.Unlock(t.Context())
		}, redlock.EndLostUnlock},
		{"lost at ttl", func(t *testing.T, mem []*memory.Node, l *redlock.Lock) error {
			mem[0].Delete("k")
			mem[1].Delete("k")
			_, err := l.TTL(t.Context())
			return err
		}, redlock.EndLostTTL},
		{"expired after a failed extend", func(t *testing.T, mem []*memory.Node, l *redlock.Lock) error {
			mem[0].SetDown(true)
			mem[1].SetDown(true)
			err := l.Extend(t.Context(), 9*time.Second)
			<-l.Done()
			return err
		}, redlock.EndExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ends := &lockEnds{}
				mem, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(9*time.Second), redlock.WithObserver(ends))
				l, err := c.TryLock(t.Context(), "k")
				if err != nil {
					t.Fatalf("TryLock = %v", err)
				}
				synctest.Wait() // every SET landed: the last may follow the grant
				want := tc.end(t, mem, l)
				// An expiry is reported (LockEnd) by Done's timer after
				// it closed Done: the test's goroutine, woken by the
				// close, could look before the report, and saw none (6
				// runs in 900 under load). The report is the event
				// looked for: wait until the timer's goroutine is done.
				synctest.Wait()
				e := ends.only(t)
				if e.How != tc.how {
					t.Errorf("LockEnd.How = %q, want %q", e.How, tc.how)
				}
				switch {
				case want == nil && e.Err != nil:
					t.Errorf("LockEnd.Err = %v, want nil", e.Err)
				case want != nil && (e.Err == nil || e.Err.Error() != want.Error()):
					t.Errorf("LockEnd.Err = %v, want the call's error %v", e.Err, want)
				}
			})
		})
	}
}
