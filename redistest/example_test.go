package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-redlock/redlock/redistest"
)

// Example starts a server without a testing.T, as the redlock demo command
// does; tests use NewServer, which also closes it. It has no Output line
// because it needs redis-server.
func Example() {
	ctx := context.Background()
	srv, err := redistest.Start(ctx)
	if errors.Is(err, redistest.ErrNotInstalled) {
		fmt.Println(redistest.InstallHint)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	if _, err := srv.Do(ctx, "SET", "greeting", "hello", "PX", "10000"); err != nil {
		log.Fatal(err)
	}
	v, err := srv.Do(ctx, "GET", "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.Addr(), v)
}

// ExampleStartCluster starts a Redis Cluster of three shards, writes a key
// where its slot is served, and moves the slot to another shard, after which
// the old owner redirects with -MOVED. Tests use NewCluster, which also
// closes it. It has no Output line because it needs redis-server.
func ExampleStartCluster() {
	ctx := context.Background()
	c, err := redistest.StartCluster(ctx, 3)
	if errors.Is(err, redistest.ErrNotInstalled) {
		fmt.Println(redistest.InstallHint)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.URL()) // redis://127.0.0.1:P1?cluster=true&addr=127.0.0.1:P2&addr=127.0.0.1:P3

	slot := redistest.KeySlot("{user42}")
	from := c.SlotShard(slot)
	if _, err := from.Primary().Do(ctx, "SET", "{user42}:name", "Ada"); err != nil {
		log.Fatal(err)
	}
	to := c.Shards()[(from.Index()+1)%3]
	if err := c.MigrateSlot(ctx, slot, to); err != nil {
		log.Fatal(err)
	}
	_, err = from.Primary().Do(ctx, "GET", "{user42}:name")
	fmt.Println(err) // MOVED <slot> <to's address>
	v, err := to.Primary().Do(ctx, "GET", "{user42}:name")
	fmt.Println(v, err) // Ada <nil>
}
