package drivernode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/driver"
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

func TestState(t *testing.T) {
	var s drivernode.State
	if err := s.Err(); err != nil {
		t.Fatalf("Err() of a new state = %v, want nil", err)
	}
	if first, err := s.Close(); !first || err != nil {
		t.Fatalf("first Close() = %v, %v; want true, nil", first, err)
	}
	if first, err := s.Close(); first || err != nil {
		t.Fatalf("second Close() = %v, %v; want false, nil", first, err)
	}
	if err := s.Err(); !errors.Is(err, driver.ErrClosed) {
		t.Fatalf("Err() after Close = %v, want driver.ErrClosed", err)
	}
	var nc drivernode.State
	nc.SetNilClient("d", "client")
	if err := nc.Err(); err == nil || err.Error() != "d: New was given a nil client" {
		t.Fatalf("Err() of a nil-client state = %v, want the nil-client error", err)
	}
	if first, err := nc.Close(); first || err == nil {
		t.Fatalf("Close() of a nil-client state = %v, %v; want false and the nil-client error", first, err)
	}
}

func TestServers(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  drivernode.Name
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"10.0.0.2:6379", "10.0.0.1:6379", "10.0.0.2:6379"}, "x(10.0.0.1:6379,10.0.0.2:6379)"},
		{[]string{"alice:s3cret@10.0.0.1:6379", "redis://bob:pw@10.0.0.2:6379", "redis://:pw@10.0.0.3:6379?password=pw"},
			"x(10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379?password=xxxxx)"},
		{[]string{"h9:1", "h8:1", "h7:1", "h6:1", "h5:1", "h4:1", "h3:1", "h2:1", "h1:1", "h0:1"},
			"x(h0:1,h1:1,h2:1,h3:1,h4:1,h5:1,h6:1,h7:1,+2)"},
	} {
		if got := drivernode.Servers("x", tc.addrs); got != tc.want {
			t.Errorf("Servers(x, %q) = %q, want %q", tc.addrs, got, tc.want)
		}
	}
}
