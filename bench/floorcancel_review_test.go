package bench

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestWaitingFloorCancelLeak reproduces the end of a chunk of handoffs on
// one node: the holder cancels the waiter's context and releases the key at
// once. A waiter whose Lock then fails must not leave its key set, once it
// had a moment to undo its grants (in the background).
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
			keys := newKeys("wf-cancel", 300)
			fails := 0
			for i, key := range keys {
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
				}
			}
			time.Sleep(500 * time.Millisecond)
			left := rc.Exists(context.Background(), keys...).Val()
			t.Logf("%d failed Locks, %d keys left", fails, left)
			if left > 0 {
				t.Errorf("%d of %d keys left set (until their TTL, %v) by Locks cancelled at the release", left, len(keys), TTL)
			}
		})
	}
}
