package rueidis_test

import (
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/redlock"
)

// Open a Client through the driver, which importing the package registers.
// Open does not connect, so this runs without servers: each node dials its
// master on first use. Lock and unlock with the Client as package redlock
// shows.
func Example() {
	c, err := redlock.Open("rueidis", []string{
		"10.0.0.1:6379", "redis://:password@10.0.0.2:6379", "redis://10.0.0.3:6379/2",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "masters")
	// Output: a lock needs 2 masters
}

// Wrap clients the application configured. The application keeps them:
// closing the redlock Client does not close them. It has no Output line
// because rueidis.NewClient connects, and these masters are made up.
func ExampleNew() {
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true, // each node is one independent master
			DisableCache:      true,
			DisableRetry:      true, // report a lost reply instead of resending the command
		})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		nodes = append(nodes, rueidisdriver.New(client))
	}
	c, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "masters")
}
