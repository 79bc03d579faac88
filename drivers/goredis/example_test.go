package goredis_test

import (
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redlock"
)

// Open a Client through the driver, which importing the package registers.
// Open does not connect, so this runs without servers: each node dials its
// master on first use. Lock and unlock with the Client as package redlock
// shows.
func Example() {
	c, err := redlock.Open("goredis", []string{
		"10.0.0.1:6379", "redis://:password@10.0.0.2:6379", "redis://10.0.0.3:6379/2",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "masters")
	// Output: a lock needs 2 masters
}

// Each node may be a whole Redis Cluster, given by seeds (the URL's host and
// every addr): its locks spread over the cluster's shards by the keys' hash
// slots. Redlock still wants a quorum of independent nodes, so give N
// independent clusters, never one cluster under two sets of seeds. Open does
// not connect, so this runs without servers.
func Example_cluster() {
	c, err := redlock.Open("goredis", []string{
		"redis://10.0.1.1:6379?cluster=true&addr=10.0.1.2:6379&addr=10.0.1.3:6379",
		"redis://10.0.2.1:6379?cluster=true&addr=10.0.2.2:6379&addr=10.0.2.3:6379",
		"redis://10.0.3.1:6379?cluster=true&addr=10.0.3.2:6379&addr=10.0.3.3:6379",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "of the 3 clusters")
	// Output: a lock needs 2 of the 3 clusters
}

// New takes a *redis.ClusterClient the application configured, which makes
// a node that is a whole Redis Cluster. Like a single server's client, it
// must never resend a command whose reply was lost (MaxRetries -1).
func ExampleNew_cluster() {
	var nodes []driver.Node
	for _, seeds := range [][]string{
		{"10.0.1.1:6379", "10.0.1.2:6379"},
		{"10.0.2.1:6379", "10.0.2.2:6379"},
		{"10.0.3.1:6379", "10.0.3.2:6379"},
	} {
		cc := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 seeds,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
		})
		defer cc.Close()
		nodes = append(nodes, goredis.New(cc))
	}
	c, err := redlock.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("a lock needs", c.Quorum(), "of the 3 clusters")
	// Output: a lock needs 2 of the 3 clusters
}

// Wrap clients the application configured. The application keeps them:
// closing the redlock Client does not close them.
func ExampleNew() {
	var nodes []driver.Node
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
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
	fmt.Println("a lock needs", c.Quorum(), "masters")
	// Output: a lock needs 2 masters
}
