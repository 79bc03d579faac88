package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// This file is a whole-file example: a driver of one's own, registered
// under a name in an init function and used through Open. Its nodes keep
// their keys in a map of the process, to stay short; a real driver talks to
// a Redis master, keeps the rules of package driver's checklist, and proves
// them with package conformance (conformance.RunRedis, or conformance.Run).

// mapDriver opens nodes on addresses of the form "map:name".
type mapDriver struct{}

func (mapDriver) Open(addr string) (driver.Node, error) {
	name, ok := strings.CutPrefix(addr, "map:")
	if !ok || name == "" {
		return nil, errors.New(`mapdriver: an address is "map:name"`)
	}
	return &mapNode{name: name, keys: map[string]entry{}}, nil
}

type entry struct {
	value   string
	expires time.Time
}

// mapNode is one node: every method is atomic under mu, honours its
// context, and fails after Close.
type mapNode struct {
	name   string
	mu     sync.Mutex
	keys   map[string]entry
	closed bool
}

// String names the node in redlock's errors.
func (n *mapNode) String() string { return "map:" + n.name }

// held returns key's entry if it has not expired; the caller holds n.mu.
func (n *mapNode) held(key string) (entry, bool) {
	e, ok := n.keys[key]
	if ok && !time.Now().Before(e.expires) {
		delete(n.keys, key)
		return entry{}, false
	}
	return e, ok
}

// check returns the error of a call on a closed node or with a done context.
func (n *mapNode) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.closed {
		return driver.ErrClosed
	}
	return nil
}

func (n *mapNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.check(ctx); err != nil {
		return false, err
	}
	if _, ok := n.held(key); ok {
		return false, nil
	}
	n.keys[key] = entry{value, time.Now().Add(max(ttl, time.Millisecond))}
	return true, nil
}

func (n *mapNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.ifHolds(ctx, key, value, func() { delete(n.keys, key) })
}

func (n *mapNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.ifHolds(ctx, key, value, func() {
		n.keys[key] = entry{value, time.Now().Add(max(ttl, time.Millisecond))}
	})
}

// ifHolds runs f, atomically, if key holds value: the compare-and-act that
// the Redis drivers do in one Lua script.
func (n *mapNode) ifHolds(ctx context.Context, key, value string, f func()) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.check(ctx); err != nil {
		return false, err
	}
	if e, ok := n.held(key); !ok || e.value != value {
		return false, nil
	}
	f()
	return true, nil
}

func (n *mapNode) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	return nil
}

// Drivers register themselves when their package is imported, as
// database/sql drivers do.
func init() {
	redlock.Register("mapdriver", mapDriver{})
}

func ExampleRegister() {
	ctx := context.Background()
	client, err := redlock.Open("mapdriver", []string{"map:a", "map:b", "map:c"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lock, err := client.TryLock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.TryLock(ctx, "invoice:42")
	fmt.Println("held:", errors.Is(err, redlock.ErrNotObtained))
	fmt.Println("released:", lock.Unlock(ctx))

	_, err = redlock.Open("mapdriver", []string{"map:a", "localhost:6379", "map:c"})
	fmt.Println(err)
	// Output:
	// held: true
	// released: <nil>
	// redlock: address 2: mapdriver: an address is "map:name"
}
