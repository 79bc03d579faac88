package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitingFloorExclusion runs four Lockers of each waiting floor on one
// key of five nodes and checks that never two hold it at once.
func TestWaitingFloorExclusion(t *testing.T) {
	addrs := Servers(t, 5)
	for _, f := range WaitingFloors() {
		t.Run(f.Name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			key := newKeys("wf-excl", 1)[0]
			var lks []Locker
			for range 4 {
				lk, err := f.Open(addrs)
				if err != nil {
					t.Fatal(err)
				}
				lks = append(lks, lk)
			}
			var holders, held atomic.Int32
			var wg sync.WaitGroup
			for _, lk := range lks {
				wg.Go(func() {
					for range 20 {
						h, err := lk.Lock(ctx, key)
						if err != nil {
							t.Error(err)
							return
						}
						if holders.Add(1) != 1 {
							t.Error("two hold the key at once")
						}
						held.Add(1)
						time.Sleep(time.Millisecond)
						holders.Add(-1)
						if err := h.Unlock(ctx); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			for _, lk := range lks {
				if err := lk.Close(); err != nil {
					t.Error(err)
				}
			}
			if held.Load() != 80 {
				t.Errorf("held %d times, want 80", held.Load())
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TestFloorSubscribeConfirmed checks that each floor's subscribe returns
// only once the server confirmed it: a message published right after it
// returns is always heard.
func TestFloorSubscribeConfirmed(t *testing.T) {
	addrs := Servers(t, 1)
	for _, f := range WaitingFloors() {
		t.Run(f.Name, func(t *testing.T) {
			lk, err := f.Open(addrs)
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Close()
			n := lk.(*floorLocker).nodes[0]
			pub := NewGoRedis(addrs[0])
			defer pub.Close()
			ctx := context.Background()
			for i := range 50 {
				ch := newKeys("wf-sub", 1)[0]
				notify := make(chan struct{}, 1)
				stop, err := n.subscribe(ctx, ch, notify)
				if err != nil {
					t.Fatal(err)
				}
				if got := pub.SPublish(ctx, ch, "x").Val(); got != 1 {
					t.Errorf("%d: SPUBLISH right after subscribe reached %d subscribers, want 1", i, got)
				}
				select {
				case <-notify:
				case <-time.After(2 * time.Second):
					t.Errorf("%d: no notice 2s after SPUBLISH", i)
				}
				stop()
			}
		})
	}
}
