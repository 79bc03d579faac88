package bench

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestWaitingFloorLateSet locks and at once unlocks with a waiting floor on
// five nodes, as the last hand-off of a chunk does, and checks that no node
// keeps the key: Lock returns at a majority, the other SETs still running.
func TestWaitingFloorLateSet(t *testing.T) {
	addrs := Servers(t, 5)
	var rcs []*goredis.Client
	for _, a := range addrs {
		rc := goredis.NewClient(&goredis.Options{Addr: a})
		defer rc.Close()
		rcs = append(rcs, rc)
	}
	ctx := context.Background()
	for _, f := range WaitingFloors() {
		t.Run(f.Name, func(t *testing.T) {
			lk, _ := f.Open(addrs)
			defer lk.Close()
			left := 0
			for range 300 {
				key := newKeys("wf-late", 1)[0]
				h, err := lk.Lock(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				for _, rc := range rcs {
					if rc.Exists(ctx, key).Val() == 1 {
						left++
						rc.Del(ctx, key)
					}
				}
			}
			if left > 0 {
				t.Errorf("%d keys left on nodes after 300 Lock+Unlock", left)
			}
		})
	}
}
