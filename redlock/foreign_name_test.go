package redlock_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// foreignNode is a node of a driver of another module that names itself by
// its address as given, password included.
type foreignNode struct {
	*memory.Node
	name string
}

func (n foreignNode) String() string { return n.name }

// A *NodeError's Addr is "its address with any password removed", and a
// Client prints no password, whatever a node's String gives: a driver of
// another module may name a node by its address, password included. It was
// copied as given (an outside check: every *NodeError, fmt.Sprint of the
// Client and the duplicate-node error showed "s3cret").
func TestForeignNodeNameHidesPassword(t *testing.T) {
	const secret = "s3cret"
	for _, tc := range []struct{ name, want string }{
		{"redis://u:" + secret + "@127.0.0.1:1", "redis://u:xxxxx@127.0.0.1:1"},
		{"rediss://:" + secret + "@127.0.0.1:2/3", "rediss://:xxxxx@127.0.0.1:2/3"},
		{"u:" + secret + "@127.0.0.1:3", "xxxxx@127.0.0.1:3"},
		{"redis://u:xxxxx@127.0.0.1:4", "redis://u:xxxxx@127.0.0.1:4"}, // this module's drivers: as it is
		{"node-5", "node-5"},
		// A password in the query, as some clients take it, and in a
		// cluster seed's user information: the name has no password
		// before its host, or one already masked there.
		{"redis://127.0.0.1:6?password=" + secret, "redis://127.0.0.1:6?password=xxxxx"},
		{"redis://u:xxxxx@127.0.0.1:7?cluster=true&addr=u:" + secret + "@127.0.0.1:8", "redis://u:xxxxx@127.0.0.1:7?cluster=true&addr=xxxxx@127.0.0.1:8"},
		{"redis://u:" + secret + "@127.0.0.1:9/1?addr=:" + secret + "@127.0.0.1:10", "redis://u:xxxxx@127.0.0.1:9/1?addr=xxxxx@127.0.0.1:10"},
		// A user information without ':', which redis-cli -u and redigo's
		// DialURL take for a password.
		{"redis://" + secret + "@127.0.0.1:11", "redis://xxxxx@127.0.0.1:11"},
	} {
		down, down2 := memory.New(), memory.New()
		down.SetDown(true)
		down2.SetDown(true)
		nodes := []driver.Node{foreignNode{down, tc.name}, down2, memory.New()}
		c, err := redlock.New(nodes, redlock.WithMaxAttempts(1))
		if err != nil {
			t.Fatalf("%s: New: %v", tc.want, err)
		}
		_, uerr := c.TryLock(t.Context(), "k")
		var named bool
		for _, e := range nodeErrors(uerr) {
			named = named || e.Addr == tc.want
		}
		if !named {
			t.Errorf("TryLock's error %v: no NodeError with Addr %q", uerr, tc.want)
		}
		for what, s := range map[string]string{
			"the error": fmt.Sprint(uerr), "%+v of the Client": fmt.Sprintf("%+v", c), "%#v of the Client": fmt.Sprintf("%#v", c),
		} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows the password: %s", what, s)
			}
		}
		c.Close()
		_, err = redlock.New([]driver.Node{foreignNode{memory.New(), tc.name}, foreignNode{memory.New(), tc.name}, memory.New()})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("New with a node named twice: %v; want an error without the password", err)
		}
	}
}

// nodeErrors returns the *NodeErrors in err's tree.
func nodeErrors(err error) []*redlock.NodeError {
	var out []*redlock.NodeError
	var walk func(error)
	walk = func(err error) {
		if ne, ok := err.(*redlock.NodeError); ok {
			out = append(out, ne)
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}
