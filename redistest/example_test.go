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
