package redlockotel

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

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

// TestAddressIsValidUTF8: redlock.node carries a node's name, which may be
// any bytes (a memory node's, another module's driver's, a host the address
// parser took as written); one invalid byte in an attribute fails the
// export of every metric beside it, as in redlock.key (keyAttr).
func TestAddressIsValidUTF8(t *testing.T) {
	for name, want := range map[string]string{
		"node-\xff":                        "node-\uFFFD",
		"redis://h\xfe:6379":               "redis://h%FE:6379", // escaped by url
		"redis://u:pw@h:6379/0?x=\xff":     "redis://h:6379/0",
		"h\xff:1?cluster=true&addr=h2:2":   "h\uFFFD:1?cluster=true&addr=h2:2",
		"redis://h:1?cluster=1&addr=b\xff": "redis://h:1?cluster=1&addr=b\uFFFD",
		"redis://h:6379":                   "redis://h:6379",
	} {
		got := address(name)
		if !utf8.ValidString(got) {
			t.Errorf("address(%q) = %q, not valid UTF-8", name, got)
		}
		if got != want {
			t.Errorf("address(%q) = %q, want %q", name, got, want)
		}
	}
}
