package redlock_test

import (
	"strings"
	"testing"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Nodes whose names differ are not refused as a node given twice because
// the names shown for them, their passwords masked, are alike: goredis names
// a client of a Unix socket by its path, in which an '@' is no password's
// ("/srv/a/redis@1.sock" and "/srv/b/redis@1.sock" were both shown as
// "xxxxx@1.sock", and New refused them as "nodes 1 and 2 are both
// xxxxx@1.sock"); nor are a foreign driver's nodes whose names differ in
// their passwords alone.
func TestNodesWhoseMaskedNamesMatchAreDistinct(t *testing.T) {
	unix := func(path string) driver.Node {
		return goredis.New(goredislib.NewClient(&goredislib.Options{Network: "unix", Addr: path}))
	}
	for _, nodes := range [][]driver.Node{
		{unix("/srv/a/redis@1.sock"), unix("/srv/b/redis@1.sock"), unix("/srv/c/redis@1.sock")},
		{foreignNode{memory.New(), "redis://u:pw1@127.0.0.1:1"}, foreignNode{memory.New(), "redis://u:pw2@127.0.0.1:1"}, memory.New()},
	} {
		c, err := redlock.New(nodes)
		if err != nil {
			t.Errorf("New: %v; want a Client: the nodes' names differ", err)
			for _, n := range nodes {
				n.Close()
			}
			continue
		}
		if s := c.String(); strings.Contains(s, "pw1") || strings.Contains(s, "pw2") {
			t.Errorf("the Client shows a password: %s", s)
		}
		c.Close()
	}
}
