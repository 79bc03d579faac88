package redlockotel_test

import (
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A failed call's error names its nodes (a *NodeError each), whose names
// may be any bytes (a memory node's, another module's driver's): the span's
// status and its exception event carry that text, and OTLP's strings must
// be valid UTF-8, or the whole batch's export fails, as for redlock.node
// and redlock.key.
func TestErrorTextIsValidUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		mem := []*memory.Node{memory.New(memory.WithName("node-\xff-1")), memory.New(memory.WithName("node-\xfe-2")), memory.New()}
		c, err := redlock.New([]driver.Node{mem[0], mem[1], mem[2]}, tel.option())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mem[0].Close()
		mem[1].Close()
		if _, err := c.TryLock(t.Context(), "k"); err == nil {
			t.Fatal("TryLock with 2 of 3 nodes closed succeeded")
		}
		failed := 0
		for _, s := range tel.spans.Ended() {
			if s.Status().Description != "" {
				failed++
			}
			if !utf8.ValidString(s.Status().Description) {
				t.Errorf("%s: status %q is not valid UTF-8", s.Name(), s.Status().Description)
			}
			for _, e := range s.Events() {
				for _, a := range e.Attributes {
					if !utf8.ValidString(a.Value.Emit()) {
						t.Errorf("%s event %s: %s = %q is not valid UTF-8", s.Name(), e.Name, a.Key, a.Value.Emit())
					}
				}
			}
		}
		if failed == 0 {
			t.Fatal("no failed span")
		}
	})
}
