package redigo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redlock"
)

// Open a Client through the driver, which importing the package registers.
// Open does not connect, so this runs without servers: each node dials its
// master on first use. Lock and unlock with the Client as package redlock
// shows.
func Example() {
	c, err := redlock.Open("redigo", []string{
		"10.0.0.1:6379", "redis://:password@10.0.0.2:6379", "redis://10.0.0.3:6379/2",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "masters")
	// Output: a lock needs 2 masters
}

// Wrap pools the application configured. The application keeps them: closing
// the redlock Client does not close them.
func ExampleNew() {
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		pool := &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", addr) // connections with contexts
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
	fmt.Println("a lock needs", c.Quorum(), "masters")
	// Output: a lock needs 2 masters
}
