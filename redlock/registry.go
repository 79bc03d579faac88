package redlock

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-redlock/redlock/driver"
)

var (
	driversMu sync.RWMutex
	drivers   = make(map[string]driver.Driver)
)

// Register makes a driver available under name for Open. It panics if d is nil
// (or a nil pointer) or if Register is called twice with the same name.
// Drivers call it from their init functions.
func Register(name string, d driver.Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	switch {
	case d == nil:
		panic("redlock: Register driver is nil")
	case nilValue(d):
		panic(fmt.Sprintf("redlock: Register driver %s is a nil %T", name, d))
	}
	if _, dup := drivers[name]; dup {
		panic("redlock: Register called twice for driver " + name)
	}
	drivers[name] = d
}

// Drivers returns the names of the registered drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for name := range drivers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open opens one node per address through the named driver and returns a
// Client over them. Addresses are what the driver accepts; the Redis drivers
// take "host:port", "redis://[user:password@]host:port[/db]", the same with
// "rediss://" for TLS, and a whole Redis Cluster as
// "redis://host:port?cluster=true&addr=host2:port2" (not redigo); the README
// gives every parameter.
//
// Open does not connect: nodes connect on first use, so Open neither fails nor
// blocks because some servers are down. It fails for an unknown driver, no
// addresses, a malformed or repeated address, or a bad option.
func Open(driverName string, addrs []string, opts ...Option) (*Client, error) {
	driversMu.RLock()
	d, ok := drivers[driverName]
	driversMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("redlock: unknown driver %q (forgotten import?)", driverName)
	}
	if len(addrs) == 0 {
		return nil, errors.New("redlock: no node addresses")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	open := d.Open
	if cfg.tls != nil {
		co, ok := d.(driver.ConfigOpener)
		if !ok {
			return nil, fmt.Errorf("redlock: driver %q does not support WithTLSConfig (driver.ConfigOpener)", driverName)
		}
		dc := driver.Config{TLS: cfg.tls}
		open = func(addr string) (driver.Node, error) { return co.OpenConfig(addr, dc) }
	}
	nodes := make([]driver.Node, 0, len(addrs))
	made := false
	defer func() {
		if !made { // an error, or a panic (a driver's, or an observer's in ObserveClient)
			for _, n := range nodes {
				n.Close()
			}
		}
	}()
	for i, addr := range addrs {
		n, err := open(addr)
		if err == nil && nilValue(n) {
			err = fmt.Errorf("driver %q returned a nil node and no error", driverName)
		}
		if err != nil {
			return nil, fmt.Errorf("redlock: address %d: %w", i+1, err)
		}
		nodes = append(nodes, n)
	}
	c, err := newClient(nodes, cfg)
	if err != nil {
		return nil, err
	}
	made = true
	return c, nil
}
