package memory

import (
	"errors"
	"sync"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("memory", Driver{}) }

var (
	storesMu sync.Mutex
	stores   = make(map[string]*store)
)

// Driver opens in-process nodes by name. Nodes opened under the same address
// share their keys for the life of the process.
type Driver struct{}

// Open returns a node on the store named addr, creating the store on first use.
// Any non-empty string is an address.
func (Driver) Open(addr string) (driver.Node, error) {
	return Open(addr)
}

// Open returns a node on the store named addr, creating it on first use; its
// fault controls act on every node opened under addr.
func Open(addr string) (*Node, error) {
	if addr == "" {
		return nil, errors.New("memory: empty address")
	}
	storesMu.Lock()
	defer storesMu.Unlock()
	s, ok := stores[addr]
	if !ok {
		s = New(WithName(addr)).s
		stores[addr] = s
	}
	return &Node{s: s}, nil
}
