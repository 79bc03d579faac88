package redlockotel

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/go-redlock/redlock/redlock"
)

// The attribute sets an observer keeps for node calls are bounded: a
// program that keeps making Clients over numbered nodes (goredis-N) does not
// grow them without end, and every call is still recorded.
func TestNodeAttrsBounded(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	obs := NewObserver(WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))).(*observer)
	const nodes = maxNodeAttrs + 500 // under the SDK's default cardinality limit (2,000)
	for i := range nodes {
		obs.NodeCall(context.Background(), redlock.NodeCall{Key: "k", Node: fmt.Sprintf("goredis-%d", i), Operation: redlock.OpAcquire, Duration: time.Millisecond, OK: true})
	}
	if n := obs.nodeCached.Load(); n > maxNodeAttrs {
		t.Errorf("%d attribute sets kept for %d nodes, want at most %d", n, nodes, maxNodeAttrs)
	}
	kept := 0
	obs.nodeAttrs.Range(func(any, any) bool { kept++; return true })
	if kept != maxNodeAttrs {
		t.Errorf("the cache holds %d entries, want %d", kept, maxNodeAttrs)
	}
	// Calls of nodes named before the bound and after it are all recorded,
	// each under its node.
	obs.NodeCall(context.Background(), redlock.NodeCall{Key: "k", Node: "goredis-0", Operation: redlock.OpAcquire, Duration: time.Millisecond, OK: true})
	obs.NodeCall(context.Background(), redlock.NodeCall{Key: "k", Node: fmt.Sprintf("goredis-%d", nodes-1), Operation: redlock.OpAcquire, Duration: time.Millisecond, OK: true})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var points int
	var calls uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "redlock.node.duration" {
				for _, dp := range h.DataPoints {
					points++
					calls += dp.Count
				}
			}
		}
	}
	if points != nodes || calls != nodes+2 {
		t.Errorf("redlock.node.duration has %d series and %d calls, want %d and %d", points, calls, nodes, nodes+2)
	}
}
