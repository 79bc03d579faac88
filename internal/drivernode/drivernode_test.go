package drivernode_test

import (
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/internal/drivernode"
)

type node struct {
	drivernode.Name
	password string
}

func TestNameHidesFields(t *testing.T) {
	n := &node{Name: "10.0.0.1:6379", password: "s3cret"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%q", "%x"} {
		if got := fmt.Sprintf(verb, n); got != "10.0.0.1:6379" {
			t.Errorf("Sprintf(%q, node) = %q, want the name alone", verb, got)
		}
	}
	if got := n.String(); got != "10.0.0.1:6379" {
		t.Errorf("String() = %q, want the name", got)
	}
}

func TestCounter(t *testing.T) {
	c := drivernode.NewCounter("x")
	if a, b := c.Next(), c.Next(); a != "x-1" || b != "x-2" {
		t.Errorf("Next, Next = %q, %q; want x-1, x-2", a, b)
	}
}

func TestIsNil(t *testing.T) {
	var p *node
	var i fmt.Stringer = p
	for _, tc := range []struct {
		v    any
		want bool
	}{{nil, true}, {p, true}, {i, true}, {&node{}, false}, {node{}, false}} {
		if got := drivernode.IsNil(tc.v); got != tc.want {
			t.Errorf("IsNil(%T) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if got := drivernode.NilClientError("d", "pool").Error(); got != "d: New was given a nil pool" {
		t.Errorf("NilClientError = %q", got)
	}
}
