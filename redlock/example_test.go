package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// The quick start: open a client through a registered driver, take a lock,
// do the work, release it. With Redis, import a Redis driver instead and give
// the addresses of independent masters, e.g. redlock.Open("rueidis",
// []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}).
func Example() {
	ctx := context.Background()
	client, err := redlock.Open("memory", []string{"example-1", "example-2", "example-3"},
		redlock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lock, err := client.Lock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lock.Key(), "with", time.Until(lock.Until()).Round(time.Second), "of validity")

	// ... work that must not run twice at once, finished before lock.Until() ...

	if err := lock.Unlock(ctx); err != nil {
		log.Println("the lock expired or was lost before Unlock:", err)
	}
	// Output: holding invoice:42 with 10s of validity
}

// TryLock makes a single attempt and reports ErrNotObtained when another
// holder has the lock.
func ExampleClient_TryLock() {
	ctx := context.Background()
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	first, err := client.TryLock(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.TryLock(ctx, "report")
	fmt.Println("second attempt:", errors.Is(err, redlock.ErrNotObtained))
	first.Unlock(ctx)
	// Output: second attempt: true
}

// Extend keeps a lock for long work; ErrLockLost means another holder may
// already have it, so the work must stop.
func ExampleLock_Extend() {
	ctx := context.Background()
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()},
		redlock.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lock, err := client.Lock(ctx, "batch")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	if err := lock.Extend(ctx, 30*time.Second); errors.Is(err, redlock.ErrLockLost) {
		fmt.Println("lost the lock: stop")
		return
	}
	fmt.Println("extended; validity left:", time.Until(lock.Until()).Round(time.Second))
	// Output: extended; validity left: 30s
}

// Lock waits, retrying with jittered backoff, until the context ends.
func ExampleClient_Lock() {
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	held, _ := client.TryLock(context.Background(), "job")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = client.Lock(ctx, "job")
	fmt.Println(errors.Is(err, redlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	held.Unlock(context.Background())
	// Output: true true
}
