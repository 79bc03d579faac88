package memory_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node { return memory.New() })
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
