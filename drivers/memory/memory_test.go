package memory_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node { return memory.New() })
}

// A zero Node is a node of its own, as New's: it passes the suite, and is
// named as New names nodes. Before, its first call panicked (nil store).
func TestConformanceZeroNode(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node { return new(memory.Node) })
	var a, b memory.Node
	if !strings.HasPrefix(a.String(), "memory-") || a.String() == b.String() {
		t.Errorf("zero Nodes are named %q and %q, want distinct memory-N names", a.String(), b.String())
	}
}

func TestConformanceOpenedByAddress(t *testing.T) {
	var opened atomic.Int64
	conformance.Run(t, func(t *testing.T) driver.Node {
		n, err := memory.Driver{}.Open(fmt.Sprintf("conformance-%d", opened.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}
