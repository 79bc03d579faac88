package clusterseeds_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/clusterseeds"
)

// slots is a reply to CLUSTER SLOTS as the clients decode it: one range per
// ID, served by the node of that ID.
func slots(ids ...string) any {
	var reply []any
	for i, id := range ids {
		reply = append(reply, []any{int64(i), int64(i), []any{"127.0.0.1", int64(7000 + i), id}})
	}
	return reply
}

// servers answers Ask from a table: a reply per seed, or errDown.
type servers struct {
	mu      sync.Mutex
	replies map[string]any
	asked   map[string]int
}

var errDown = errors.New("dial tcp: connection refused")

func (s *servers) set(seed string, reply any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[seed] = reply
}

func (s *servers) ask(_ context.Context, seed string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked[seed]++
	r, ok := s.replies[seed]
	if !ok {
		return nil, errDown
	}
	return r, nil
}

func newServers(replies map[string]any) *servers {
	return &servers{replies: replies, asked: make(map[string]int)}
}

func TestIDs(t *testing.T) {
	reply := []any{
		[]any{int64(0), int64(5460), []any{"10.0.0.1", int64(7000), "a1"}, []any{"10.0.0.4", int64(7003), "r1"}},
		[]any{int64(5461), int64(10922), []any{"10.0.0.2", int64(7001), "a2"}},
		[]any{int64(10923), int64(16383), []any{"10.0.0.1", int64(7000), "a1"}}, // a1 again
		[]any{int64(1), int64(2), []any{"10.0.0.3", int64(7002)}},               // Redis 3: no ID
		"not a range",
	}
	got := strings.Join(clusterseeds.IDs(reply), ",")
	if got != "a1,r1,a2" {
		t.Errorf("IDs = %s, want a1,r1,a2", got)
	}
	for _, r := range []any{nil, []any{}, "ERR", int64(1)} {
		if ids := clusterseeds.IDs(r); len(ids) != 0 {
			t.Errorf("IDs(%v) = %v, want none", r, ids)
		}
	}
}

func TestNilCheckerForOneSeed(t *testing.T) {
	c := clusterseeds.New([]string{"s1"}, time.Second, func(context.Context, string) (any, error) {
		t.Error("a node of one seed asked it")
		return nil, nil
	})
	if c != nil {
		t.Fatal("New of one seed: want nil")
	}
	if err := c.Check(t.Context()); err != nil || c.Err() != nil || c.Admit(t.Context(), "s1") != nil {
		t.Errorf("a nil Checker refused: %v", err)
	}
	c.Close()
}

// Seeds of one cluster, one of them a replica (its own ID, the others'
// too), one a node being added (it knows itself and one other node), one
// down and one not yet met (no slot): no refusal, and the client may
// connect to every seed that answered without a new question.
func TestCheckOneCluster(t *testing.T) {
	s := newServers(map[string]any{
		"p1":    slots("a1", "a2"),
		"r1":    slots("a1", "a2", "r1"),
		"added": slots("a2", "new"),
		"fresh": slots(), // cluster-enabled, met by no one yet
	})
	c := clusterseeds.New([]string{"p1", "r1", "added", "down", "fresh"}, time.Second, s.ask)
	defer c.Close()
	if err := c.Check(t.Context()); err != nil {
		t.Fatalf("Check = %v, want nil", err)
	}
	for _, seed := range []string{"p1", "r1", "added", "127.0.0.1:1"} {
		if err := c.Admit(t.Context(), seed); err != nil {
			t.Errorf("Admit(%s) = %v", seed, err)
		}
	}
	if s.asked["p1"] != 1 || s.asked["127.0.0.1:1"] != 0 {
		t.Errorf("asked %v: want each seed vouched for asked once, and no address that is no seed", s.asked)
	}
	// A seed that did not answer is asked again before the client may
	// connect to it: it still does not answer, so the client does not
	// connect. A seed that answered with no slot is asked again too, and
	// admitted: it gives the client no map.
	if err := c.Admit(t.Context(), "down"); !errors.Is(err, errDown) || !strings.Contains(err.Error(), "down") {
		t.Errorf("Admit(down) = %v, want its error", err)
	}
	if err := c.Admit(t.Context(), "fresh"); err != nil || s.asked["fresh"] != 2 {
		t.Errorf("Admit(fresh) = %v after %d questions, want nil after 2", err, s.asked["fresh"])
	}
	if c.Err() != nil {
		t.Errorf("Err = %v", c.Err())
	}
}

func TestCheckTwoClusters(t *testing.T) {
	s := newServers(map[string]any{"a1": slots("A1", "A2"), "a2": slots("A2", "A1"), "b1": slots("B1")})
	c := clusterseeds.New([]string{"a1", "a2", "b1"}, time.Second, s.ask)
	defer c.Close()
	err := c.Check(t.Context())
	if !errors.Is(err, driver.ErrSeedsOfTwoClusters) || driver.PermanentCode(err) == "" {
		t.Fatalf("Check = %v, want ErrSeedsOfTwoClusters, permanent", err)
	}
	if !strings.Contains(err.Error(), "a1 and b1") {
		t.Errorf("Check = %v, want the first seed and the other cluster's named", err)
	}
	for _, addr := range []string{"a1", "b1", "elsewhere"} {
		if got := c.Admit(t.Context(), addr); !errors.Is(got, driver.ErrSeedsOfTwoClusters) {
			t.Errorf("Admit(%s) after the refusal = %v", addr, got)
		}
	}
	if err := c.Check(t.Context()); !errors.Is(err, driver.ErrSeedsOfTwoClusters) {
		t.Errorf("a second Check = %v: the refusal is for good", err)
	}
	if s.asked["a1"] != 1 {
		t.Errorf("asked %v: want one check", s.asked)
	}
}

// A seed of the other cluster that was down during the check answers
// later: the client asks to connect to it (a refresh of its map), and the
// node is refused then.
func TestAdmitLateSeedOfAnotherCluster(t *testing.T) {
	s := newServers(map[string]any{"a1": slots("A1"), "a2": slots("A1", "A2")})
	c := clusterseeds.New([]string{"a1", "a2", "b1"}, time.Second, s.ask)
	defer c.Close()
	if err := c.Check(t.Context()); err != nil {
		t.Fatalf("Check = %v", err)
	}
	s.set("b1", slots("B1"))
	err := c.Admit(t.Context(), "b1")
	if !errors.Is(err, driver.ErrSeedsOfTwoClusters) || !strings.Contains(err.Error(), "a1 and b1") {
		t.Fatalf("Admit(b1) = %v, want the refusal naming a1 and b1", err)
	}
	if !errors.Is(c.Err(), driver.ErrSeedsOfTwoClusters) {
		t.Errorf("Err = %v after the refusal", c.Err())
	}
}

// Check waits for a seed that hangs no longer than the Checker's timeout,
// and skips it; a call whose context ends first gets its context's error.
func TestCheckHungSeed(t *testing.T) {
	var hung atomic.Int32
	ask := func(ctx context.Context, seed string) (any, error) {
		if seed == "hung" {
			hung.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return slots("A1"), nil
	}
	c := clusterseeds.New([]string{"a1", "hung"}, 200*time.Millisecond, ask)
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Check with a done context = %v, want its error", err)
	}
	if err := c.Check(t.Context()); err != nil {
		t.Errorf("Check = %v, want the hung seed skipped", err)
	}
	if hung.Load() != 1 {
		t.Errorf("the hung seed was asked %d times, want 1", hung.Load())
	}
}

// Close ends a check under way; a Checker closed before its first check
// asks nothing.
func TestClose(t *testing.T) {
	// Buffered: the first question's send must not depend on the
	// goroutine below already waiting for it (unbuffered, both questions
	// could find it not yet there, and nothing cancelled the check).
	started := make(chan struct{}, 1)
	ask := func(ctx context.Context, _ string) (any, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c := clusterseeds.New([]string{"s1", "s2"}, time.Hour, ask)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	if err := c.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Check = %v", err)
	}
	c.Close() // returns: the questions end with the Checker's context

	closed := clusterseeds.New([]string{"s1", "s2"}, time.Hour, func(context.Context, string) (any, error) {
		t.Error("a closed Checker asked a seed")
		return nil, nil
	})
	closed.Close()
	if err := closed.Check(t.Context()); err != nil {
		t.Errorf("Check after Close = %v", err)
	}
}

// Unvouched names the seeds that Admit would ask (one down at the check,
// one that answered with no slot), and Settled holds once each agreed; a
// refused node is never settled, and its seed that disagreed stays
// unvouched. A nil Checker has nothing to ask.
func TestUnvouchedSettled(t *testing.T) {
	s := newServers(map[string]any{"a1": slots("A1", "A2"), "fresh": slots()})
	c := clusterseeds.New([]string{"a1", "down", "fresh", "a1"}, time.Second, s.ask)
	defer c.Close()
	if c.Settled() || !c.Unvouched("a1") {
		t.Error("before the check: want unsettled, a1 unvouched")
	}
	if err := c.Check(t.Context()); err != nil {
		t.Fatalf("Check = %v", err)
	}
	for addr, want := range map[string]bool{"a1": false, "down": true, "fresh": true, "elsewhere": false} {
		if got := c.Unvouched(addr); got != want {
			t.Errorf("Unvouched(%s) = %v, want %v", addr, got, want)
		}
	}
	if c.Settled() {
		t.Error("Settled with two seeds unvouched")
	}
	s.set("down", slots("A2"))
	s.set("fresh", slots("A1"))
	for _, addr := range []string{"down", "fresh"} {
		if err := c.Admit(t.Context(), addr); err != nil {
			t.Fatalf("Admit(%s) = %v", addr, err)
		}
	}
	if !c.Settled() || c.Unvouched("down") || c.Unvouched("fresh") {
		t.Error("every seed (a1 given twice) agreed: want settled, none unvouched")
	}

	r := clusterseeds.New([]string{"a1", "b1"}, time.Second, s.ask)
	defer r.Close()
	if err := r.Check(t.Context()); err != nil {
		t.Fatalf("Check = %v (b1 down)", err)
	}
	s.set("b1", slots("B1"))
	if err := r.Admit(t.Context(), "b1"); !errors.Is(err, driver.ErrSeedsOfTwoClusters) {
		t.Fatalf("Admit(b1) = %v, want the refusal", err)
	}
	if r.Settled() || !r.Unvouched("b1") || r.Unvouched("a1") {
		t.Error("refused: want unsettled, b1 alone unvouched")
	}

	var none *clusterseeds.Checker
	if !none.Settled() || none.Unvouched("a1") {
		t.Error("a nil Checker: want settled, nothing unvouched")
	}
}
