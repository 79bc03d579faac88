package bench

import (
	"fmt"
	"testing"
	"time"
)

// idleGaps are the idle times of the Idle case.
var idleGaps = []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond}

// Idle benchmarks one PING to one redis-server by a bare go-redis client
// (NewGoRedis), after an untimed idle time of the caller: none, 100µs, 1ms,
// or 10ms, the Handoff case's hold. It measures what the machine, not any
// lock, costs a round trip that follows an idle time: on a 2-core virtual
// machine whose idle cores are slow to wake, a round trip after 10ms idle
// can cost many times one made at once. It reports p50-ns, p99-ns and max-ns
// of the PINGs alone. Sub-benchmarks: idle=0s,100µs,1ms,10ms. Not in the
// runner; see bench/RESULTS.md, "The hand-off's floor".
func Idle(b *testing.B) {
	addr := Servers(b, 1)[0]
	rc := NewGoRedis(addr)
	defer rc.Close()
	for _, gap := range idleGaps {
		b.Run(fmt.Sprintf("idle=%v", gap), func(b *testing.B) {
			ctx, cancel := runContext(b)
			defer cancel()
			if err := rc.Ping(ctx).Err(); err != nil { // connected before the clock starts
				b.Fatal(err)
			}
			lat := make([]int64, b.N)
			b.ResetTimer()
			for i := range b.N {
				if gap > 0 {
					b.StopTimer()
					time.Sleep(gap)
					b.StartTimer()
				}
				t0 := time.Now()
				if err := rc.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				lat[i] = int64(time.Since(t0))
			}
			b.StopTimer()
			report(b, lat)
		})
	}
}
