package peers_test

import (
	"testing"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/bench/peers"
)

func each(b *testing.B, run func(*testing.B, bench.Contender)) {
	for _, c := range peers.All() {
		b.Run(c.Name, func(b *testing.B) { run(b, c) })
	}
}

// The cases of package bench, with the peers as contenders; the names match
// the drivers' in the main module: Lock/redsync-rueidis/nodes=5/lockers=64
// beside Lock/rueidis/nodes=5/lockers=64.
func BenchmarkLock(b *testing.B)    { each(b, bench.Lock) }
func BenchmarkExtend(b *testing.B)  { each(b, bench.Extend) }
func BenchmarkHandoff(b *testing.B) { each(b, bench.Handoff) }
func BenchmarkStalled(b *testing.B) { each(b, bench.Stalled) }
func BenchmarkFar(b *testing.B)     { each(b, bench.Far) }

func TestBenchmarks(t *testing.T) { bench.CheckBenchmarks(t) }
