package redlockotel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A lost lock's cause (redlock.LockEnd.Err) reaches the telemetry: the
// redlock.lock.lost counter has an error.type of few values (the class of
// the nodes' errors, or *redlock.VoteError when they no longer held the
// lock), and the redlock.lock.lost event has it too, with the cause's text
// (exception.message). Before, both said how the lock was lost, never why.
func TestLostLockCarriesCause(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lose     func(mem []*memory.Node)
		how      string
		errType  string
		contains string // in exception.message
	}{
		{"majority deleted", func(mem []*memory.Node) {
			mem[0].Delete("k")
			mem[1].Delete("k")
		}, redlock.EndLostExtend, "*redlock.VoteError", "2 refused"},
		{"majority down", func(mem []*memory.Node) {
			mem[0].SetDown(true)
			mem[1].SetDown(true)
		}, redlock.EndExpired, "_OTHER", memory.ErrDown.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel := newTelemetry(t)
				mem := []*memory.Node{memory.New(), memory.New(), memory.New()}
				c, err := redlock.New([]driver.Node{mem[0], mem[1], mem[2]}, tel.option(), redlock.WithTTL(9*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				err = c.Do(t.Context(), "k", func(ctx context.Context) error {
					synctest.Wait() // every SET landed: the last may follow the grant
					tc.lose(mem)
					select {
					case <-ctx.Done():
					case <-time.After(time.Minute):
						t.Error("fn's context was not canceled when the lock was lost")
					}
					return nil
				})
				if !errors.Is(err, redlock.ErrLockLost) {
					t.Fatalf("Do = %v, want ErrLockLost", err)
				}

				points := sum(t, tel.metrics(t)["redlock.lock.lost"])
				if len(points) != 1 || points[0].Value != 1 {
					t.Fatalf("redlock.lock.lost = %+v, want one lock lost", points)
				}
				how, _ := points[0].Attributes.Value("redlock.lost.how")
				et, ok := points[0].Attributes.Value("error.type")
				if how.AsString() != tc.how || !ok || et.AsString() != tc.errType {
					t.Errorf("redlock.lock.lost's attributes = %v, want redlock.lost.how=%s error.type=%s", points[0].Attributes.ToSlice(), tc.how, tc.errType)
				}

				events := 0
				for _, s := range tel.spans.Ended() {
					for _, e := range s.Events() {
						if e.Name != "redlock.lock.lost" {
							continue
						}
						events++
						et, _ := attr(e.Attributes, "error.type")
						msg, _ := attr(e.Attributes, "exception.message")
						if et.AsString() != tc.errType || !strings.Contains(msg.AsString(), tc.contains) {
							t.Errorf("%s's redlock.lock.lost event has error.type %q, exception.message %q; want %q and the cause (%q)",
								s.Name(), et.AsString(), msg.AsString(), tc.errType, tc.contains)
						}
					}
				}
				if events != 1 {
					t.Errorf("%d redlock.lock.lost events, want 1", events)
				}
			})
		})
	}
}
