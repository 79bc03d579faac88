package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
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
		// No quorum confirmed the release: the lock was lost (or its
		// nodes failed). A nil error says the key was released, not that
		// the work finished within Until: check Until (or Done) for that.
		log.Println("the lock was lost before Unlock:", err)
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

// Connect makes the nodes' connections before the first acquisition, so
// that a TryLock (one attempt, each node call bounded by the node timeout)
// on a fresh Client is not failed by its own dials. Bound it by the time
// the connections may take; memory nodes have none to make, and answer at
// once.
func ExampleClient_Connect() {
	ctx := context.Background()
	client, err := redlock.Open("memory", []string{"connect-1", "connect-2", "connect-3"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	connectCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = client.Connect(connectCtx)
	cancel()
	if err != nil {
		// Too many nodes unreachable (errors.Is(err,
		// redlock.ErrUnavailable)), ctx ended, or two addresses of one
		// server: TryLock would say so too.
		log.Println("connecting:", err)
	}

	lock, err := client.TryLock(ctx, "nightly-report")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lock.Key())
	lock.Unlock(ctx)
	// Output: holding nightly-report
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

// Done tells a holder that works by hand (not through Client.Do) when the lock
// is no longer known to be held: here its validity runs out without an Extend.
// After that the work must stop, and Extend fails without a call to the nodes.
func ExampleLock_Done() {
	ctx := context.Background()
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()},
		redlock.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lock, err := client.TryLock(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	steps := time.NewTicker(100 * time.Millisecond)
	defer steps.Stop()
	for done := false; !done; {
		select {
		case <-lock.Done(): // Until passed, an Extend or TTL found it lost, or Unlock ran
			fmt.Println("lock over at Until:", !time.Now().Before(lock.Until()))
			done = true
		case <-steps.C:
			// ... one step of the work, well inside the TTL ...
		}
	}
	fmt.Println("Extend after it:", errors.Is(lock.Extend(ctx, time.Second), redlock.ErrLockLost))
	// Output:
	// lock over at Until: true
	// Extend after it: true
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

// Lock waits while another holder has the key, and obtains it once the
// holder unlocks: a waiter is woken by the release (the nodes publish it)
// rather than at its next backoff. Bound the wait with the context's
// deadline, or with WithMaxAttempts.
func ExampleClient_Lock_wait() {
	client, err := redlock.Open("memory", []string{"wait-1", "wait-2", "wait-3"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	holder, err := client.TryLock(context.Background(), "job")
	if err != nil {
		log.Fatal(err)
	}
	released := make(chan struct{})
	go func() { // the holder finishes its work, and unlocks
		time.Sleep(50 * time.Millisecond)
		holder.Unlock(context.Background())
		close(released)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := client.Lock(ctx, "job") // waits for the holder
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	<-released
	fmt.Println("the waiter holds", lock.Key(), "after the holder unlocked")
	// Output: the waiter holds job after the holder unlocked
}

// fencedStore is a protected resource that checks fencing tokens: it rejects
// a write whose token is lower than the highest it has accepted.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	data    string
}

func (s *fencedStore) Write(token uint64, data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("token %d is older than %d: rejected", token, s.highest)
	}
	s.highest, s.data = token, data
	return nil
}

// Fencing tokens stop a holder that paused past its validity: its late write
// carries an older token than the next holder's, and the resource rejects it.
func ExampleWithFencing() {
	ctx := context.Background()
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	client, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]},
		redlock.WithFencing(), redlock.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store := &fencedStore{}

	a, _ := client.Lock(ctx, "ledger")
	fmt.Println("A holds token", a.Token())
	// A pauses (GC, swap, SIGSTOP) and its lock expires meanwhile.
	for _, n := range nodes {
		n.Delete("ledger")
	}
	b, _ := client.Lock(ctx, "ledger")
	fmt.Println("B holds token", b.Token())
	fmt.Println("B writes:", store.Write(b.Token(), "B's entry"))
	// A wakes up, unaware, and writes.
	fmt.Println("A writes:", store.Write(a.Token(), "A's stale entry"))
	b.Unlock(ctx)
	// Output:
	// A holds token 1
	// B holds token 2
	// B writes: <nil>
	// A writes: token 1 is older than 2: rejected
}

// Do holds the lock while fn runs, extending it in the background, and
// cancels fn's context if the lock is lost.
func ExampleClient_Do() {
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()},
		redlock.WithTTL(500*time.Millisecond), redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	err = client.Do(context.Background(), "nightly-report", func(ctx context.Context) error {
		select {
		case <-time.After(time.Second): // longer than the TTL: Do keeps extending
			return nil
		case <-ctx.Done():
			return context.Cause(ctx) // redlock.ErrLockLost: stop touching the resource
		}
	})
	fmt.Println("done:", err)
	// Output: done: <nil>
}

// holdContext holds key until release is called or the lock is lost, in the
// shape of rueidislock's Locker.WithContext: it returns a context that is
// canceled when the lock is lost (its cause redlock.ErrLockLost) or released,
// and release, which unlocks and returns Do's error (nil, or one matching
// ErrLockLost). Do extends the lock meanwhile.
func holdContext(ctx context.Context, c *redlock.Client, key string) (context.Context, func() error, error) {
	held := make(chan context.Context, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.Do(ctx, key, func(lockCtx context.Context) error {
			held <- lockCtx
			select {
			case <-stop:
			case <-lockCtx.Done(): // lost: Do returns ErrLockLost
			}
			return nil
		})
	}()
	select {
	case lockCtx := <-held:
		return lockCtx, sync.OnceValue(func() error { close(stop); return <-done }), nil
	case err := <-done: // not obtained
		return nil, nil, err
	}
}

// A lock held across calls, as a context that ends when the lock does (the
// shape of rueidislock's WithContext), from Do: see holdContext.
func ExampleClient_Do_heldContext() {
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, release, err := holdContext(context.Background(), client, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	// ... work with ctx, across calls, while Do extends the lock ...
	_, err = client.TryLock(context.Background(), "invoice:42")
	fmt.Println("held elsewhere:", errors.Is(err, redlock.ErrNotObtained), "context:", ctx.Err())
	fmt.Println("release:", release(), "context:", ctx.Err())
	// Output:
	// held elsewhere: true context: <nil>
	// release: <nil> context: context canceled
}

// With WithFencing, Do's fn reads its lock's fencing token from its context
// and passes it with every write, so that the resource rejects the writes of
// a holder that paused past its validity.
func ExampleTokenFrom() {
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()}, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store := &fencedStore{}

	for _, entry := range []string{"first", "second"} {
		err := client.Do(context.Background(), "ledger", func(ctx context.Context) error {
			token, _ := redlock.TokenFrom(ctx)
			fmt.Println("writing", entry, "with token", token)
			return store.Write(token, entry)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("a write with token 1 now:", store.Write(1, "stale"))
	// Output:
	// writing first with token 1
	// writing second with token 2
	// a write with token 1 now: token 1 is older than 2: rejected
}

// A call's options apply to that call only: one Client serves locks of
// several lifetimes, each checked as Open checks its options. An option that
// only a Client takes is an error that names it.
func ExampleWithTTL_perCall() {
	ctx := context.Background()
	client, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()}) // TTL 10s
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lock, err := client.TryLock(ctx, "nightly-report", redlock.WithTTL(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	left, err := lock.TTL(ctx) // what a quorum of nodes guarantees
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a quorum holds it for about", left.Round(time.Minute))
	lock.Unlock(ctx)

	_, err = client.Lock(ctx, "nightly-report", redlock.WithKeyPrefix("lock:"))
	fmt.Println(err)
	// Output:
	// a quorum holds it for about 1m0s
	// redlock: Lock: WithKeyPrefix applies to the Client only: give it to New or Open
}

// ErrUnavailable tells an outage (too many nodes failed for a quorum) from
// contention (the key is held elsewhere); the votes are in a *VoteError.
func ExampleErrUnavailable() {
	ctx := context.Background()
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	client, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	held, _ := client.TryLock(ctx, "job")
	_, err = client.TryLock(ctx, "job")
	fmt.Println("held elsewhere: unavailable?", errors.Is(err, redlock.ErrUnavailable))
	held.Unlock(ctx)

	nodes[0].SetDown(true) // two of three nodes fail
	nodes[1].SetDown(true)
	_, err = client.Lock(ctx, "other-job", redlock.WithMaxAttempts(3))
	var votes *redlock.VoteError
	if errors.Is(err, redlock.ErrUnavailable) && errors.As(err, &votes) {
		fmt.Printf("unavailable: %d failed, %d needed\n", votes.Failed, votes.Needed)
	}
	// Output:
	// held elsewhere: unavailable? false
	// unavailable: 2 failed, 2 needed
}

// WithLogger logs through log/slog: at Warn, a lost lock and an extension
// that failed while the lock was held; at Debug, every attempt, wait and node
// error too. Every record has the key; none has a password or a lock value.
func ExampleWithLogger() {
	// A handler for the example's output: no time, no durations, and only
	// the first line of err (why the lock was lost: the votes and each
	// node's error follow, on lines of their own).
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "held":
				return slog.Attr{}
			case "err":
				first, _, _ := strings.Cut(a.Value.String(), "\n")
				return slog.String("err", first)
			}
			return a
		},
	}))
	nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
	client, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]}, redlock.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	lock, err := client.Lock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range nodes {
		n.Delete("invoice:42") // evicted underneath its holder
	}
	lock.Extend(ctx, 10*time.Second)
	// Output: level=WARN msg="redlock: lock lost" key=invoice:42 how=lost_extend err="redlock: lock lost"
}

// nodeLatency is an Observer that keeps the slowest call to each node; it
// embeds NopObserver for the events it ignores.
type nodeLatency struct {
	redlock.NopObserver
	mu      sync.Mutex
	slowest map[string]time.Duration
}

func (o *nodeLatency) NodeCall(_ context.Context, e redlock.NodeCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slowest[e.Node] = max(o.slowest[e.Node], e.Duration)
}

// An Observer sees every attempt, Extend, Unlock, node call, lost lock and
// wake-up; its context-taking methods can carry a trace span to the calls
// within (redlockotel does).
func ExampleWithObserver() {
	obs := &nodeLatency{slowest: map[string]time.Duration{}}
	client, err := redlock.Open("memory", []string{"observed-1", "observed-2", "observed-3"}, redlock.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	lock, err := client.Lock(ctx, "report")
	if err != nil {
		log.Fatal(err)
	}
	lock.Unlock(ctx)

	obs.mu.Lock()
	defer obs.mu.Unlock()
	// A node's call is reported before its reply counts, so at least a
	// quorum's are in by now; the last node's may still be on its way.
	fmt.Println("a quorum of nodes reported:", len(obs.slowest) >= client.Quorum())
	// Output: a quorum of nodes reported: true
}
