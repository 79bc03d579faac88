package bench_test

import (
	"testing"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis" // registers "goredis"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/drivers/redigo"   // registers "redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"  // registers "rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo" // registers "valkeygo"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// drivers returns a contender for every registered driver, with its defaults.
// The memory driver's nodes are in-process stores named by the addresses, so
// its figures are the library's cost without a network.
func drivers() []bench.Contender {
	var cs []bench.Contender
	for _, name := range redlock.Drivers() {
		c := bench.Driver(name)
		if name == "memory" {
			c.Stall = stallMemory
		}
		cs = append(cs, c)
	}
	return cs
}

// stallMemory stalls the memory stores named addrs.
func stallMemory(addrs []string) (func(), error) {
	var nodes []*memory.Node
	for _, a := range addrs {
		n, err := memory.Open(a)
		if err != nil {
			return nil, err
		}
		n.SetStalled(true)
		nodes = append(nodes, n)
	}
	return func() {
		for _, n := range nodes {
			n.SetStalled(false)
		}
	}, nil
}

func each(b *testing.B, cs []bench.Contender, run func(*testing.B, bench.Contender)) {
	for _, c := range cs {
		b.Run(c.Name, func(b *testing.B) { run(b, c) })
	}
}

func BenchmarkLock(b *testing.B)     { each(b, drivers(), bench.Lock) }
func BenchmarkExtend(b *testing.B)   { each(b, drivers(), bench.Extend) }
func BenchmarkHandoff(b *testing.B)  { each(b, drivers(), bench.Handoff) }
func BenchmarkStalled(b *testing.B)  { each(b, drivers(), bench.Stalled) }
func BenchmarkScale(b *testing.B)    { each(b, drivers(), bench.Scale) }
func BenchmarkScaleFar(b *testing.B) { each(b, drivers(), bench.ScaleFar) }
func BenchmarkFar(b *testing.B)      { each(b, drivers(), bench.Far) }

// BenchmarkCluster is the Cluster case for the drivers with a cluster
// client: three single servers against three clusters of 1, 2, 3 shards.
func BenchmarkCluster(b *testing.B) {
	each(b, []bench.Contender{bench.Driver("goredis"), bench.Driver("rueidis"), bench.Driver("valkeygo")}, bench.Cluster)
}

// observed returns, for the memory driver (the library's own cost) and for
// rueidis (over the network), the contender without observers, with a no-op
// redlock.Observer, and with redlockotel over no-op providers: the names are
// the driver's, "+observer" and "+redlockotel".
func observed() []bench.Contender {
	otel := redlockotel.Instrument(redlockotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		redlockotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	var cs []bench.Contender
	for _, name := range []string{"memory", "rueidis"} {
		nop := bench.Driver(name, redlock.WithObserver(redlock.NopObserver{}))
		nop.Name = name + "+observer"
		ot := bench.Driver(name, otel)
		ot.Name = name + "+redlockotel"
		cs = append(cs, bench.Driver(name), nop, ot)
	}
	return cs
}

// BenchmarkObserve is the cost of observation: Observe/rueidis+observer/...
// against Observe/rueidis/....
func BenchmarkObserve(b *testing.B) { each(b, observed(), bench.Observe) }

// BenchmarkFloor is the Lock case for the bare clients: the floor of each
// driver. Its sub-benchmarks have the names of the drivers' under
// BenchmarkLock: Floor/rueidis/nodes=5/lockers=64 is the floor of
// Lock/rueidis/nodes=5/lockers=64.
func BenchmarkFloor(b *testing.B) { each(b, bench.Floors(), bench.Lock) }

// BenchmarkFloorDel is BenchmarkFloor with floors that release by DEL
// rather than by the release script (bench.DelFloors).
func BenchmarkFloorDel(b *testing.B) { each(b, bench.DelFloors(), bench.Lock) }

// BenchmarkHandoffFloor is the hand-off with one waiter of each driver and
// of its client's waiting floor in turn (bench.HandoffFloor).
func BenchmarkHandoffFloor(b *testing.B) {
	for _, f := range bench.WaitingFloors() {
		b.Run(f.Name, func(b *testing.B) { bench.HandoffFloor(b, bench.Driver(f.Name), f) })
	}
}

// BenchmarkServerHandoff weighs a hand-off made by the nodes themselves
// against the hand-off by release notice, both by hand with go-redis
// (bench.ServerHandoff).
func BenchmarkServerHandoff(b *testing.B) { bench.ServerHandoff(b) }

// BenchmarkIdle is one PING by a bare client after an idle time (bench.Idle):
// the machine's cost of waking, which bounds the Handoff case.
func BenchmarkIdle(b *testing.B) { bench.Idle(b) }

// BenchmarkRun runs bench.Run, the entry point for a driver's own benchmark,
// on one driver.
func BenchmarkRun(b *testing.B) {
	bench.Run(b, func(addrs []string) (*redlock.Client, error) { return redlock.Open("rueidis", addrs) })
}

func TestBenchmarks(t *testing.T) { bench.CheckBenchmarks(t) }

// redisDrivers are the drivers of Redis clients, by the names they register.
var redisDrivers = map[string]driver.Driver{
	"goredis": goredis.Driver{}, "redigo": redigo.Driver{}, "rueidis": rueidis.Driver{}, "valkeygo": valkeygo.Driver{},
}

// BenchmarkLoneNode is the lone call of each driver's Client, of its node by
// hand and of its client's floor, in turn (bench.LoneNode).
func BenchmarkLoneNode(b *testing.B) {
	for _, f := range bench.Floors() {
		b.Run(f.Name, func(b *testing.B) { bench.LoneNode(b, redisDrivers[f.Name], bench.Driver(f.Name), f) })
	}
}

// BenchmarkLone is the lone-call case: each driver and its client's floor in
// turn, one caller (bench.Lone).
func BenchmarkLone(b *testing.B) {
	for _, f := range bench.Floors() {
		b.Run(f.Name, func(b *testing.B) { bench.Lone(b, bench.Driver(f.Name), f) })
	}
}
