package bench

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// LoneNode benchmarks the lone call at one server, one caller, three ways,
// one operation of each in turn (the one that goes first rotating), each on
// a key of its own: c, a Client of the driver d (Lock, then Unlock); d's node
// alone, its commands sent by hand as a Client's rounds send them (SetNX,
// then the release with its notice, driver.Notifier's ReleaseNotify, each
// with the node timeout as its network timeout); and floor, the driver's
// client doing the same commands by hand (see Floors). It tells where a
// driver's lone call spends the time it spends beyond its client's: in the
// node, over the client, or in package redlock around the node's calls.
//
// It reports client-p50-ns, node-p50-ns and floor-p50-ns, the p50 of each;
// node-x-floor, the floor's p50 over the node's; and client-x-node, the
// node's over the Client's (1 or more when the first is as fast). Not in the
// runner; see bench/RESULTS.md, "Where the lone call's time goes".
func LoneNode(b *testing.B, d driver.Driver, c, floor Contender) {
	b.Helper()
	addrs := Servers(b, 1)
	client := openWarm(b, c, addrs, 1)
	defer closeLocker(b, c, client)
	fl := openWarm(b, floor, addrs, 1)
	defer closeLocker(b, floor, fl)
	n, err := d.Open(addrs[0])
	if err != nil {
		b.Fatalf("%s: Open: %v", c.Name, err)
	}
	defer n.Close()
	nt, ok := n.(driver.Notifier)
	if !ok {
		b.Skipf("%s: its node publishes no releases (not a driver.Notifier)", c.Name)
	}
	ctx, cancel := runContext(b)
	defer cancel()
	keys := newKeys("lonenode", 3)
	nctx := driver.WithNetworkTimeout(ctx, redlock.MaxNodeTimeout)
	byHand := func(key string) error {
		ok, err := n.SetNX(nctx, key, "v", TTL)
		if err == nil && !ok {
			err = errors.New("SET NX: key exists")
		}
		if err != nil {
			return err
		}
		if ok, err = nt.ReleaseNotify(nctx, key, "v"); err == nil && !ok {
			err = errors.New("release: not held")
		}
		return err
	}
	// A failed call's outcome is unknown: its SET or release may have left
	// the key held for TTL, and every later call on it would fail. The
	// node's calls go on to a new key.
	node := func() error {
		err := byHand(keys[1])
		if err != nil {
			keys[1] = newKeys("lonenode-node", 1)[0]
		}
		return err
	}
	// Warm, as openWarm does the others. The warm-up fails when more than a
	// tenth of its rounds failed, as the measured ones do (failures.check),
	// not at the first failure: its calls have the node timeout as their
	// network timeout (200ms), which a loaded machine's call can exceed
	// under -race; one of its 200 calls failed the benchmark before it
	// measured anything (TestBenchmarks: "node: rueidis: release: context
	// deadline exceeded").
	var warm failures
	const warmRounds = 100
	for range warmRounds {
		warm.add(node())
	}
	if n := warm.n.Load(); n*10 > warmRounds {
		b.Fatalf("%s: node: warm-up: %d of %d rounds failed; the first: %v", c.Name, n, warmRounds, warm.first)
	}
	lat := [3][]int64{make([]int64, b.N), make([]int64, b.N), make([]int64, b.N)}
	var f [3]failures
	ops := [3]func() error{
		func() error { return lockUnlock(ctx, client, keys[0]) },
		node,
		func() error { return lockUnlock(ctx, fl, keys[2]) },
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range 3 {
			k := (i + j) % 3
			t0 := time.Now()
			f[k].add(ops[k]())
			lat[k][i] = int64(time.Since(t0))
		}
	}
	b.StopTimer()
	for k := range f {
		f[k].check(b)
	}
	var p50 [3]float64
	for k := range lat {
		slices.Sort(lat[k])
		p50[k] = float64(percentile(lat[k], 0.50))
	}
	b.ReportMetric(p50[0], "client-p50-ns")
	b.ReportMetric(p50[1], "node-p50-ns")
	b.ReportMetric(p50[2], "floor-p50-ns")
	if p50[1] > 0 && p50[0] > 0 {
		b.ReportMetric(p50[2]/p50[1], "node-x-floor")
		b.ReportMetric(p50[1]/p50[0], "client-x-node")
	}
}
