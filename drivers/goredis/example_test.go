package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// startServers starts n throwaway redis-server processes for the examples;
// real code has its masters' addresses already.
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

// Open a Client through the registered driver. Addresses may also be
// "redis://user:password@host:port/db". It has no Output line because it needs
// redis-server.
func Example() {
	ctx := context.Background()
	addrs, stop := startServers(ctx, 3)
	defer stop()

	c, err := redlock.Open("goredis", addrs, redlock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.TryLock(ctx, "report:daily")
	if errors.Is(err, redlock.ErrNotObtained) {
		fmt.Println("someone else is running the report")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key())
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
}

// Wrap clients configured by the application, with New. The application
// keeps ownership of its clients: closing the redlock Client does not close
// them.
func ExampleNew() {
	ctx := context.Background()
	addrs, stop := startServers(ctx, 3)
	defer stop()

	var nodes []driver.Node
	for _, addr := range addrs {
		rdb := redis.NewClient(&redis.Options{
			Addr:                  addr,
			ContextTimeoutEnabled: true, // the context's deadline bounds each command
			MaxRetries:            -1,   // never resend a command whose reply was lost
		})
		defer rdb.Close()
		nodes = append(nodes, goredis.New(rdb))
	}
	c, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	l, err := c.Lock(ctx, "inventory:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key())
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
}

// TestExamples runs the examples, which have no Output lines because they
// need redis-server.
func TestExamples(t *testing.T) {
	redistest.NewServer(t) // skips the test if redis-server is missing
	Example()
	ExampleNew()
}
