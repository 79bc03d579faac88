package valkeygo_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redlock"
)

// Open a Client over three Valkey (or Redis) masters by address, with TLS
// for every node, through the driver, which importing the package registers.
// Open does not connect, so this runs without servers: each node dials its
// master on first use.
func Example() {
	c, err := redlock.Open("valkeygo",
		[]string{"10.0.0.1:6379", "rediss://:password@10.0.0.2:6380", "10.0.0.3:6379"},
		redlock.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS13}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("valkeygo nodes; a lock needs", c.Quorum(), "of them")
	// Output: valkeygo nodes; a lock needs 2 of them
}

// Wrap valkey-go clients the application configured, here from URLs, and
// hold a lock while doing some work. The application keeps its clients:
// closing the redlock Client does not close them. It has no Output line
// because valkey.NewClient connects, and these masters are made up.
func ExampleNew() {
	urls := []string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://:password@10.0.0.3:6379/1"}
	nodes := make([]driver.Node, len(urls))
	for i, url := range urls {
		opt := valkey.MustParseURL(url)
		opt.ForceSingleClient = true // each node is one independent master
		opt.DisableCache = true
		opt.DisableRetry = true // report a lost reply instead of resending the command
		client, err := valkey.NewClient(opt)
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		nodes[i] = valkeygo.New(client)
	}
	c, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := c.Lock(ctx, "report:2026-11")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	fmt.Println("building the report")
}
