package redlockotel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A lock's key may be any bytes (Redis keys are binary), but the string
// attributes of OTLP are protobuf strings, which must be valid UTF-8: one
// that is not fails the marshalling of the whole export request ("string
// field contains invalid UTF-8"), so every span of the batch, other keys'
// and the program's own, is lost. redlock.key, on the spans and on the
// redlock.lock.lost event, is the key made valid UTF-8 (each invalid byte
// as U+FFFD, as encoding/json and slog's JSON handler write it). Before, it
// was the key's bytes as they were.
func TestKeyAttributeIsValidUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const key = "job:\xff\xfe:42"
		want := "job:\uFFFD\uFFFD:42"
		tel := newTelemetry(t)
		mem := []*memory.Node{memory.New(), memory.New(), memory.New()}
		c, err := redlock.New([]driver.Node{mem[0], mem[1], mem[2]}, tel.option(), redlock.WithTTL(9*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Do(t.Context(), key, func(ctx context.Context) error {
			synctest.Wait() // every SET landed: the last may follow the grant
			mem[0].Delete(key)
			mem[1].Delete(key)
			<-ctx.Done() // the next Extend finds the lock lost
			return nil
		})
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Do = %v, want ErrLockLost", err)
		}

		check := func(where string, attrs []attribute.KeyValue) {
			t.Helper()
			for _, a := range attrs {
				if a.Value.Type() == attribute.STRING && !utf8.ValidString(a.Value.AsString()) {
					t.Errorf("%s: %s = %q is not valid UTF-8", where, a.Key, a.Value.AsString())
				}
				if a.Key == "redlock.key" && a.Value.AsString() != want {
					t.Errorf("%s: redlock.key = %q, want %q", where, a.Value.AsString(), want)
				}
			}
		}
		keyed, events := 0, 0
		for _, s := range tel.spans.Ended() {
			if _, ok := attr(s.Attributes(), "redlock.key"); ok {
				keyed++
			}
			check(s.Name(), s.Attributes())
			if !utf8.ValidString(s.Status().Description) {
				t.Errorf("%s: status %q is not valid UTF-8", s.Name(), s.Status().Description)
			}
			for _, e := range s.Events() {
				if e.Name == "redlock.lock.lost" {
					events++
				}
				check(s.Name()+" event "+e.Name, e.Attributes)
			}
		}
		if keyed < 4 || events != 1 {
			t.Errorf("%d spans with redlock.key (want Do, Lock, TryLock, Extend), %d redlock.lock.lost events (want 1)", keyed, events)
		}
		if strings.Contains(want, key) {
			t.Fatal("the test's key is valid UTF-8")
		}
	})
}
