package memory_test

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

// chargeOnce is code under test: it charges an invoice unless another
// process holds the invoice's lock.
func chargeOnce(ctx context.Context, c *redlock.Client, invoice string) (bool, error) {
	lock, err := c.TryLock(ctx, "invoice:"+invoice)
	switch {
	case errors.Is(err, redlock.ErrUnavailable): // an outage, not contention
		return false, err
	case errors.Is(err, redlock.ErrNotObtained):
		return false, nil // someone else is charging it
	case err != nil:
		return false, err
	}
	defer lock.Unlock(ctx)
	// ... charge, before lock.Until() ...
	return true, nil
}

// In a unit test, give the code a Client over memory nodes: no servers, and
// the nodes' fault controls can make a Redis outage on demand. Another
// Client over Conns of the same nodes is another process: the two contend
// as two processes would, and each closes only its own Conns. Nodes from
// New belong to the test: every run of it (go test -count) starts with no
// keys, and tests running in parallel share none.
func Example() {
	ctx := context.Background()
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	us, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
	if err != nil {
		log.Fatal(err)
	}
	defer us.Close()
	other, err := redlock.New([]driver.Node{nodes[0].Conn(), nodes[1].Conn(), nodes[2].Conn()}) // another process
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()

	charged, err := chargeOnce(ctx, us, "42")
	fmt.Println("free invoice charged:", charged, err)

	held, err := other.TryLock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	charged, err = chargeOnce(ctx, us, "42")
	fmt.Println("held invoice charged:", charged, err)
	held.Unlock(ctx)

	// Two of three nodes down: no quorum is possible. (Another invoice:
	// Unlock returns once a quorum released, so the third node may still
	// hold 42 for a moment, and a refusal there would decide first.)
	nodes[0].SetDown(true)
	nodes[1].SetDown(true)
	_, err = chargeOnce(ctx, us, "43")
	fmt.Println("outage:", errors.Is(err, redlock.ErrUnavailable))
	// Output:
	// free invoice charged: true <nil>
	// held invoice charged: false <nil>
	// outage: true
}

// A node on a FakeClock expires its keys when the clock is moved, not as
// time passes: a test can make a lock expire on the nodes at once. As Redis
// does, the node keeps a key through the millisecond of its expiry time.
func ExampleFakeClock() {
	ctx := context.Background()
	clock := memory.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	node := memory.New(memory.WithClock(clock))
	defer node.Close()

	ok, err := node.SetNX(ctx, "job", "value", 10*time.Second)
	fmt.Println("set:", ok, err)
	clock.Advance(9 * time.Second)
	fmt.Println("held after 9s:", node.Holds("job"))
	clock.Advance(time.Second)
	fmt.Println("held after 10s:", node.Holds("job"))
	clock.Advance(time.Millisecond)
	fmt.Println("held after 10.001s:", node.Holds("job"))
	// Output:
	// set: true <nil>
	// held after 9s: true
	// held after 10s: true
	// held after 10.001s: false
}

// Nodes from New have keys of their own; give them to redlock.New. The
// fault controls then act on one node: here a node whose replies are lost
// after it applied the command, as on a broken network.
func ExampleNode_SetLoseReplies() {
	ctx := context.Background()
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	client, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	nodes[2].SetLoseReplies(true)
	lock, err := client.TryLock(ctx, "job") // two of three suffice
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted by a quorum of", client.Quorum())
	fmt.Println("unlocked:", lock.Unlock(ctx))
	// Output:
	// granted by a quorum of 2
	// unlocked: <nil>
}

// A partition between one process and some nodes, while another process
// still reaches them all: SetConnDown (or SetConnStalled) on a Conn cuts
// that connection only, and the store keeps its keys. Cut from two of three
// nodes, our Client finds no quorum (an outage, not contention) while the
// other Client takes the lock; once healed, ours sees it held by the other
// (contention), then free.
func ExampleNode_SetConnDown() {
	ctx := context.Background()
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	ours := []*memory.Node{nodes[0].Conn(), nodes[1].Conn(), nodes[2].Conn()}
	us, err := redlock.New([]driver.Node{ours[0], ours[1], ours[2]})
	if err != nil {
		log.Fatal(err)
	}
	defer us.Close()
	them, err := redlock.New([]driver.Node{nodes[0].Conn(), nodes[1].Conn(), nodes[2].Conn()})
	if err != nil {
		log.Fatal(err)
	}
	defer them.Close()

	ours[1].SetConnDown(true)
	ours[2].SetConnDown(true)
	_, err = us.TryLock(ctx, "job")
	fmt.Println("cut off, ours unavailable:", errors.Is(err, redlock.ErrUnavailable))
	theirs, err := them.TryLock(ctx, "job")
	fmt.Println("theirs:", err)

	ours[1].SetConnDown(false)
	ours[2].SetConnDown(false)
	_, err = us.TryLock(ctx, "job")
	fmt.Println("healed, ours refused:", errors.Is(err, redlock.ErrNotObtained) && !errors.Is(err, redlock.ErrUnavailable))
	if err := theirs.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Unlock returned once a quorum released; a release still on its way,
	// and our refused attempts' own keys, which they release in the
	// background, are on some nodes a moment longer: Lock waits them out
	// (TryLock could find them still there).
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lock, err := us.Lock(wait, "job")
	fmt.Println("released, ours:", err)
	if err == nil {
		lock.Unlock(ctx)
	}
	// Output:
	// cut off, ours unavailable: true
	// theirs: <nil>
	// healed, ours refused: true
	// released, ours: <nil>
}
