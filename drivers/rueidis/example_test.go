package rueidis_test

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// startServers starts n redis-server processes for an example. Real code
// names its own independent Redis masters instead.
func startServers(ctx context.Context, n int) (addrs []string, stop func(), err error) {
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
			return nil, nil, err
		}
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	return addrs, stop, nil
}

// Open a lock client through the registered "rueidis" driver. Importing the
// driver package, even blank, registers it.
func Example() {
	ctx := context.Background()
	addrs, stop, err := startServers(ctx, 3) // e.g. "10.0.0.1:6379", "redis://:password@10.0.0.2:6379/0", ...
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	c, err := redlock.Open("rueidis", addrs)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	lock, err := c.TryLock(ctx, "reports:daily")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked", lock.Key())
	if err := lock.Unlock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("unlocked")
	// Output:
	// locked reports:daily
	// unlocked
}

// Wrap rueidis clients the application already configured. The application
// keeps owning them: closing the lock client does not close them.
func ExampleNew() {
	ctx := context.Background()
	addrs, stop, err := startServers(ctx, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	var nodes []driver.Node
	for _, addr := range addrs {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:       []string{addr},
			ForceSingleClient: true, // each node is one independent master
			DisableCache:      true,
			DisableRetry:      true, // report a lost reply instead of retrying the command
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer client.Close()
		nodes = append(nodes, rueidisdriver.New(client))
	}

	c, err := redlock.New(nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	lock, err := c.TryLock(ctx, "reports:daily")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Unlock(ctx)
	fmt.Println("locked", lock.Key())
	// Output: locked reports:daily
}
