package bench

import (
	"context"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestFloorSubscribeBounded checks that each floor's subscribe returns by
// the end of its context when the server accepts the connection but never
// answers: a redis-server stopped with SIGSTOP (a stalled node).
func TestFloorSubscribeBounded(t *testing.T) {
	s := redistest.NewServer(t)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	defer s.Resume()
	addr := s.Addr()
	for _, f := range []struct {
		name string
		open func() (floorNode, error)
	}{
		{"goredis", func() (floorNode, error) { return goredisFloor{NewGoRedis(addr)}, nil }},
		{"redigo", func() (floorNode, error) { return redigoFloor{NewRedigoPool(addr), addr}, nil }},
	} {
		t.Run(f.name, func(t *testing.T) {
			n, err := f.open()
			if err != nil {
				t.Skip(err)
			}
			defer n.close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				stop, err := n.subscribe(ctx, "ch", make(chan struct{}, 1))
				if stop != nil {
					stop()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("subscribe to a stalled server: no error")
				}
			case <-time.After(3 * time.Second):
				t.Fatal("subscribe to a stalled server still waits 3s after its context ended")
			}
		})
	}
}
