package redigo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// startServers starts n redis-server processes for an example; real code
// names its own independent Redis masters.
func startServers(ctx context.Context, n int) (addrs []string, stop func()) {
	var servers []*redistest.Server
	stop = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for range n {
		s, err := redistest.Start(ctx)
		if err != nil {
			stop()
			log.Fatal(err)
		}
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	return addrs, stop
}

// Example opens a Redlock client through the registered "redigo" driver.
// Addresses may also carry credentials and a database:
// "redis://:password@host:6379/0".
func Example() {
	ctx := context.Background()
	addrs, stop := startServers(ctx, 3)
	defer stop()

	c, err := redlock.Open("redigo", addrs)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.TryLock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key())
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked orders:42
	// unlocked
}

// ExampleNew builds nodes over pools the application already configured. The
// application keeps the pools: closing the client does not close them.
func ExampleNew() {
	ctx := context.Background()
	addrs, stop := startServers(ctx, 3)
	defer stop()

	var nodes []driver.Node
	for _, addr := range addrs {
		pool := &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr)
			},
			MaxIdle: 16,
		}
		defer pool.Close()
		nodes = append(nodes, redigo.New(pool))
	}
	c, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.TryLock(ctx, "reports:daily")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
	fmt.Println("locked", l.Key())
	// Output:
	// locked reports:daily
}
