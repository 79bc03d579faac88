package rueidiscore

import (
	"context"
	"net"
	"sync"
	"testing"
)

// TestConnSetAddWhileBreaking: the stall probe (or Close) takes the set's
// connections and closes them while the library adds one it just dialed
// (dial). add published the connection in the set before setting its stop
// hook, so a Close in between raced on it (and called a nil func).
func TestConnSetAddWhileBreaking(t *testing.T) {
	closing, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s connSet
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, c := range s.to("") {
				c.Close()
			}
		}
	}()
	for i := 0; i < 20000; i++ {
		a, b := net.Pipe()
		s.add(closing, a, "x").Close()
		b.Close()
	}
	close(done)
	wg.Wait()
	if got := len(s.to("")); got != 0 {
		t.Fatalf("connections left in the set: %d", got)
	}
}
