package bench

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestWaitingFloorCancelLeak reproduces the end of a chunk of handoffs on
// one node: the holder cancels the waiter's context and releases the key at
// once. A waiter whose Lock then fails must not leave the key set.
func TestWaitingFloorCancelLeak(t *testing.T) {
	addrs := Servers(t, 1)
	rc := goredis.NewClient(&goredis.Options{Addr: addrs[0]})
	defer rc.Close()
	for _, f := range WaitingFloors() {
		t.Run(f.Name, func(t *testing.T) {
			h, _ := f.Open(addrs)
			w, _ := f.Open(addrs)
			defer h.Close()
			defer w.Close()
			key := newKeys("wf-cancel", 1)[0]
			leaks, fails := 0, 0
			for i := range 300 {
				held, err := h.Lock(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				res := make(chan error, 1)
				go func() {
					hw, err := w.Lock(ctx, key)
					if err == nil {
						hw.Unlock(context.Background())
					}
					res <- err
				}()
				time.Sleep(time.Duration(i%20) * 100 * time.Microsecond)
				cancel()
				if err := held.Unlock(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := <-res; err != nil {
					fails++
					if rc.Exists(context.Background(), key).Val() == 1 {
						leaks++
						rc.Del(context.Background(), key)
					}
				}
			}
			t.Logf("%d failed Locks, %d left the key set", fails, leaks)
			if leaks > 0 {
				t.Errorf("%d of %d failed Locks left the key set (until its TTL, %v)", leaks, fails, TTL)
			}
		})
	}
}
