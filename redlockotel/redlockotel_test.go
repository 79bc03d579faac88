package redlockotel_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	_ "github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
)

// telemetry is an in-memory span recorder and a manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		tel.tp.Shutdown(context.Background())
		tel.mp.Shutdown(context.Background())
	})
	return tel
}

// option instruments a Client with tel's providers, and opts.
func (tel *telemetry) option(opts ...redlockotel.Option) redlock.Option {
	return redlockotel.Instrument(append([]redlockotel.Option{redlockotel.WithTracerProvider(tel.tp), redlockotel.WithMeterProvider(tel.mp)}, opts...)...)
}

// metrics collects the metrics, by name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func open(t *testing.T, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.Open("goredis", addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func attr(attrs []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func histogram(t *testing.T, data metricdata.Aggregation) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	require.True(t, ok, "%T is not a float64 histogram", data)
	return h.DataPoints
}

func sum(t *testing.T, data metricdata.Aggregation) []metricdata.DataPoint[int64] {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%T is not an int64 sum", data)
	return s.DataPoints
}

// noKey checks that no data point of any metric has the lock's key.
func noKey(t *testing.T, ms map[string]metricdata.Aggregation) {
	t.Helper()
	check := func(name string, set attribute.Set) {
		_, has := set.Value("redlock.key")
		assert.False(t, has, "%s has the key as an attribute: keys are unbounded", name)
	}
	for name, data := range ms {
		switch d := data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				check(name, p.Attributes)
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				check(name, p.Attributes)
			}
		}
	}
}

func TestDoSpanTree(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	// A TTL and node timeout that a loaded machine's slow calls do not
	// exhaust (with a TTL of 1s and its default node timeout of 100ms, Do
	// lost the lock in 1 run of 30 under load): the spans do not depend on
	// them.
	c := open(t, redistest.Addrs(servers), tel.option(), redlock.WithFencing(),
		redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithExtendInterval(50*time.Millisecond))
	extends := func() int {
		n := 0
		for _, s := range tel.spans.Ended() {
			if s.Name() == "redlock.Extend" {
				n++
			}
		}
		return n
	}
	var heldDuring int64
	err := c.Do(t.Context(), "otel-do", func(ctx context.Context) error {
		_, span := tel.tp.Tracer("user").Start(ctx, "work")
		time.Sleep(200 * time.Millisecond)
		// Two extensions at least while it runs: 200ms are four intervals,
		// but a loaded machine ran none in them (1 run in 150).
		for extends() < 2 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(10 * time.Millisecond):
			}
		}
		span.End()
		for _, p := range sum(t, tel.metrics(t)["redlock.locks.held"]) {
			heldDuring += p.Value
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), heldDuring, "redlock.locks.held while Do's function runs")

	spans := tel.spans.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	require.Len(t, byName["redlock.Do"], 1)
	do := byName["redlock.Do"][0]
	assert.False(t, do.Parent().IsValid(), "Do is a root span here")
	require.Len(t, byName["redlock.Lock"], 1)
	lock := byName["redlock.Lock"][0]
	assert.Equal(t, do.SpanContext().SpanID(), lock.Parent().SpanID(), "Lock is a child of Do")
	require.Len(t, byName["redlock.TryLock"], 1)
	try := byName["redlock.TryLock"][0]
	assert.Equal(t, lock.SpanContext().SpanID(), try.Parent().SpanID(), "the attempt is a child of Lock")
	require.GreaterOrEqual(t, len(byName["redlock.Extend"]), 2, "Do extended every 50ms while its function ran")
	failed := 0
	for _, e := range byName["redlock.Extend"] {
		assert.Equal(t, do.SpanContext().SpanID(), e.Parent().SpanID(), "Extend is a child of Do")
		if e.Status().Code == codes.Error {
			failed++ // in flight when the function returned: Do cancels it
		}
	}
	assert.LessOrEqual(t, failed, 1, "only an extension cut short by the end of Do fails")
	require.Len(t, byName["redlock.Unlock"], 1)
	assert.Equal(t, do.SpanContext().SpanID(), byName["redlock.Unlock"][0].Parent().SpanID(), "Unlock is a child of Do")
	require.Len(t, byName["work"], 1)
	assert.Equal(t, do.SpanContext().SpanID(), byName["work"][0].Parent().SpanID(), "the function's own spans are children of Do")
	for _, s := range spans {
		assert.Equal(t, do.SpanContext().TraceID(), s.SpanContext().TraceID())
		if s.Name() == "work" {
			continue
		}
		v, ok := attr(s.Attributes(), "redlock.key")
		assert.True(t, ok, "%s has redlock.key", s.Name())
		assert.Equal(t, "otel-do", v.AsString())
	}
	for _, name := range []string{"redlock.Do", "redlock.Lock", "redlock.TryLock", "redlock.Extend", "redlock.Unlock"} {
		s := byName[name][0]
		q, ok := attr(s.Attributes(), "redlock.quorum")
		assert.True(t, ok, name)
		assert.Equal(t, int64(2), q.AsInt64(), name)
		g, ok := attr(s.Attributes(), "redlock.nodes.granted")
		assert.True(t, ok, name)
		assert.GreaterOrEqual(t, g.AsInt64(), int64(2), name)
		tok, ok := attr(s.Attributes(), "redlock.fencing.token")
		assert.True(t, ok, "%s has the fencing token", name)
		assert.Equal(t, int64(1), tok.AsInt64(), name)
	}
	oc, _ := attr(try.Attributes(), "redlock.outcome")
	assert.Equal(t, "granted", oc.AsString())

	ms := tel.metrics(t)
	noKey(t, ms)
	acq := histogram(t, ms["redlock.acquire.duration"])
	require.Len(t, acq, 1)
	assert.Equal(t, uint64(1), acq[0].Count)
	v, _ := acq[0].Attributes.Value("redlock.outcome")
	assert.Equal(t, "granted", v.AsString())
	hold := histogram(t, ms["redlock.hold.duration"])
	require.Len(t, hold, 1)
	assert.Equal(t, uint64(1), hold[0].Count)
	assert.GreaterOrEqual(t, hold[0].Sum, 0.2, "held for the 200ms of the function at least (seconds)")
	held := sum(t, ms["redlock.locks.held"])
	require.Len(t, held, 1)
	assert.Zero(t, held[0].Value, "released")
	var ops []string
	for _, p := range histogram(t, ms["redlock.node.duration"]) {
		op, _ := p.Attributes.Value("redlock.operation")
		ops = append(ops, op.AsString())
	}
	for _, op := range []string{redlock.OpAcquire, redlock.OpFence, redlock.OpExtend, redlock.OpRelease} {
		assert.Contains(t, ops, op)
	}
}

func TestRefusedAttempt(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	c := open(t, redistest.Addrs(servers), tel.option())
	holder := open(t, redistest.Addrs(servers))
	ctx := t.Context()
	l, err := holder.TryLock(ctx, "otel-busy")
	require.NoError(t, err)
	defer l.Unlock(ctx)

	_, err = c.TryLock(ctx, "otel-busy")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	spans := tel.spans.Ended()
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, "redlock.TryLock", s.Name())
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Contains(t, s.Status().Description, "lock not obtained")
	require.NotEmpty(t, s.Events())
	assert.Equal(t, "exception", s.Events()[0].Name, "the error is recorded")
	oc, _ := attr(s.Attributes(), "redlock.outcome")
	assert.Equal(t, "not_obtained", oc.AsString())

	ms := tel.metrics(t)
	noKey(t, ms)
	acq := histogram(t, ms["redlock.acquire.duration"])
	require.Len(t, acq, 1)
	v, _ := acq[0].Attributes.Value("redlock.outcome")
	assert.Equal(t, "not_obtained", v.AsString())

	// Two nodes of three down: unavailable, not merely refused.
	for _, s := range servers[:2] {
		require.NoError(t, s.Kill())
	}
	_, err = c.TryLock(ctx, "otel-down")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	outcomes := map[string]uint64{}
	for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
		v, _ := p.Attributes.Value("redlock.outcome")
		outcomes[v.AsString()] += p.Count
	}
	assert.Equal(t, map[string]uint64{"not_obtained": 1, "unavailable": 1}, outcomes)
}

// acquisitions counts the acquisition calls that returned, by key.
type acquisitions struct {
	redlock.NopObserver
	mu sync.Mutex
	n  map[string]int
}

func (a *acquisitions) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation == redlock.OpAcquire {
		a.mu.Lock()
		a.n[e.Key]++
		a.mu.Unlock()
	}
}

func (a *acquisitions) calls(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[key]
}

func TestLostLockCounting(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	acq := &acquisitions{n: map[string]int{}}
	c := open(t, redistest.Addrs(servers), tel.option(), redlock.WithObserver(acq), redlock.WithExtendInterval(50*time.Millisecond))
	ctx := t.Context()
	del := func(key string) {
		for _, s := range servers {
			_, err := s.Do(ctx, "DEL", key)
			require.NoError(t, err)
		}
	}

	err := c.Do(ctx, "otel-lost-do", func(fctx context.Context) error {
		del("otel-lost-do")
		<-fctx.Done()
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)

	l, err := c.TryLock(ctx, "otel-lost-unlock")
	require.NoError(t, err)
	// TryLock returns at a quorum, with a node's SET possibly unanswered:
	// Unlock counts such a node as of unknown state, not as a refusal (a
	// node that refused and one unknown do not say the lock was lost), so
	// that the key deleted everywhere would be found lost only when every
	// SET had answered (it failed 3 runs in 60 under load). Wait for them.
	require.Eventually(t, func() bool { return acq.calls("otel-lost-unlock") == len(servers) }, 5*time.Second, time.Millisecond,
		"every node answered the acquisition")
	del("otel-lost-unlock")
	require.ErrorIs(t, l.Unlock(ctx), redlock.ErrLockLost)

	l, err = c.TryLock(ctx, "otel-kept")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))

	ms := tel.metrics(t)
	noKey(t, ms)
	lost := map[string]int64{}
	for _, p := range sum(t, ms["redlock.lock.lost"]) {
		v, _ := p.Attributes.Value("redlock.lost.how")
		lost[v.AsString()] += p.Value
	}
	assert.Equal(t, map[string]int64{redlock.EndLostExtend: 1, redlock.EndLostUnlock: 1}, lost)
	held := sum(t, ms["redlock.locks.held"])
	require.Len(t, held, 1)
	assert.Zero(t, held[0].Value, "each lost or released lock counted down once")
	var holds uint64
	for _, p := range histogram(t, ms["redlock.hold.duration"]) {
		holds += p.Count
	}
	assert.Equal(t, uint64(3), holds)

	var found bool
	for _, s := range tel.spans.Ended() {
		if s.Name() != "redlock.Extend" {
			continue
		}
		for _, e := range s.Events() {
			if e.Name == "redlock.lock.lost" {
				found = true
				assert.Equal(t, codes.Error, s.Status().Code)
			}
		}
	}
	assert.True(t, found, "the Extend that found the lock lost has the event")
}

func TestSlowNodeHistogram(t *testing.T) {
	const password = "otel-pw-5xR2"
	servers := redistest.NewServers(t, 3, redistest.WithPassword(password))
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL()
	}
	tel := newTelemetry(t)
	c := open(t, urls, tel.option(), redlock.WithNodeTimeout(100*time.Millisecond))
	slow := servers[2]
	require.NoError(t, slow.Pause())
	defer slow.Resume()
	ctx := t.Context()
	l, err := c.TryLock(ctx, "otel-slow")
	require.NoError(t, err, "two nodes of three are a quorum")
	require.NoError(t, l.Unlock(ctx))

	type point struct {
		count     uint64
		sum       float64
		errorType string
	}
	var points map[string]point
	require.Eventually(t, func() bool {
		points = map[string]point{}
		for _, p := range histogram(t, tel.metrics(t)["redlock.node.duration"]) {
			node, _ := p.Attributes.Value("redlock.node")
			op, _ := p.Attributes.Value("redlock.operation")
			et, _ := p.Attributes.Value("error.type")
			points[node.AsString()+" "+op.AsString()] = point{p.Count, p.Sum, et.AsString()}
		}
		_, ok := points["redis://"+slow.Addr()+" acquire"]
		return ok
	}, 5*time.Second, 10*time.Millisecond, "the slow node's acquire is recorded when its timeout ends")
	for k := range points {
		assert.NotContains(t, k, password)
		assert.NotContains(t, k, "xxxxx", "no credentials, not even masked")
	}
	sp := points["redis://"+slow.Addr()+" acquire"]
	assert.Equal(t, "timeout", sp.errorType, "the slow node is named, with error.type")
	assert.GreaterOrEqual(t, sp.sum, 0.1, "it took its node timeout (seconds)")
	for _, s := range servers[:2] {
		p, ok := points["redis://"+s.Addr()+" acquire"]
		require.True(t, ok, "%v", points)
		assert.Empty(t, p.errorType)
		assert.Less(t, p.sum, sp.sum, "a healthy node is faster than the paused one")
	}
}

func TestGlobalProviders(t *testing.T) {
	tel := newTelemetry(t)
	tp, mp := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tel.tp)
	otel.SetMeterProvider(tel.mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(tp)
		otel.SetMeterProvider(mp)
	})
	servers := redistest.NewServers(t, 3)
	// Without options, and with nil providers, which keep the defaults
	// (their documentation says so): also nil pointers of the SDK's
	// provider types, as a variable of that type left unset gives
	// (Instrument panicked on them, calling their Tracer and Meter).
	for _, opt := range []redlock.Option{
		redlockotel.Instrument(),
		redlockotel.Instrument(redlockotel.WithTracerProvider(nil), redlockotel.WithMeterProvider(nil)),
		redlockotel.Instrument(redlockotel.WithTracerProvider((*sdktrace.TracerProvider)(nil)),
			redlockotel.WithMeterProvider((*sdkmetric.MeterProvider)(nil))),
	} {
		ended := len(tel.spans.Ended())
		c := open(t, redistest.Addrs(servers), opt)
		l, err := c.TryLock(t.Context(), "otel-global")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		var names []string
		for _, s := range tel.spans.Ended()[ended:] {
			names = append(names, s.Name())
		}
		assert.Equal(t, "redlock.TryLock redlock.Unlock", strings.Join(names, " "))
		assert.Contains(t, tel.metrics(t), "redlock.acquire.duration")
	}
}

// gauge returns the data points of a gauge metric; none when the metric was
// not collected.
func gauge[N int64 | float64](t *testing.T, data metricdata.Aggregation) []metricdata.DataPoint[N] {
	t.Helper()
	if data == nil {
		return nil
	}
	g, ok := data.(metricdata.Gauge[N])
	require.True(t, ok, "a gauge, got %T", data)
	return g.DataPoints
}

// pendingOn returns the value of redlock.node.pending for the node whose
// address ends with addr, and how many points it has.
func pendingOn(t *testing.T, tel *telemetry, addr string) (value int64, points int) {
	for _, p := range gauge[int64](t, tel.metrics(t)["redlock.node.pending"]) {
		if node, _ := p.Attributes.Value("redlock.node"); strings.HasSuffix(node.AsString(), addr) {
			value = p.Value
			points++
		}
	}
	return value, points
}

// queueOn runs count(n) TryLocks and Unlocks on keys of their own through
// clients[n], all at once, for each n, and waits for them: behind a stopped
// node, its queue in each Client holds their calls to it.
func queueOn(t *testing.T, clients []*redlock.Client, count func(n int) int) {
	var wg sync.WaitGroup
	for n, c := range clients {
		for i := range count(n) {
			wg.Go(func() {
				if l, err := c.TryLock(t.Context(), fmt.Sprintf("k%d", i)); err == nil {
					l.Unlock(t.Context())
				}
			})
		}
	}
	wg.Wait()
}

// depthOn returns the depth of c's queue for the node whose address ends
// with addr.
func depthOn(c *redlock.Client, addr string) int64 {
	for _, q := range c.Queues() {
		if strings.HasSuffix(q.Node, addr) {
			return int64(q.Depth)
		}
	}
	return 0
}

// connectAll makes c's connections while every node answers, with Connect,
// which returns once every node answered its question (none is left in
// flight), for the tests that then stop a node and look at its queue. A
// warm-up lock would not do: its Unlock returns once a quorum confirmed the
// release, which may still be in flight to the node about to be stopped,
// answered before the pause but read after it. That call holds one of the
// node's two senders; when it returns, that sender sends every command
// queued meanwhile as one pipeline, so that the queue lasts a moment
// instead of the node timeout, and no read sees it (the stopped node's
// depth was 0 right after 32 TryLocks in 36 rounds of 2400 with such a
// lock, 0 of 1200 once its release was awaited, 0 of 2400 with Connect).
func connectAll(t *testing.T, c *redlock.Client) {
	t.Helper()
	require.NoError(t, c.Connect(t.Context()))
}

// The nodes' local queues are gauges: a stopped node's commands queue up
// behind the ones on the network, and redlock.node.pending and
// redlock.node.pending.wait show it, for that node only, with its address
// without credentials; after Close, the Client is no longer read.
func TestNodeQueueGauges(t *testing.T) {
	const password = "otel-pw-9qT4"
	servers := redistest.NewServers(t, 3, redistest.WithPassword(password))
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL()
	}
	tel := newTelemetry(t)
	c, err := redlock.Open("goredis", urls, tel.option(), redlock.WithTTL(20*time.Second), redlock.WithNodeTimeout(2*time.Second))
	require.NoError(t, err)
	defer c.Close()
	ctx := t.Context()
	// Connections made while every node answers, and no call left in
	// flight (see connectAll).
	connectAll(t, c)

	stopped := servers[0]
	require.NoError(t, stopped.Pause())
	defer stopped.Resume()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			if l, err := c.TryLock(ctx, fmt.Sprintf("otel-queue-%d", i)); err == nil {
				l.Unlock(ctx)
			}
		})
	}
	// Read while the calls wait: the stopped node's queue lasts until the
	// first of its two sends times out (the node timeout), and is then
	// sent at once; a single read after the TryLocks returned could come
	// after that on a loaded machine. Both gauges from one collection.
	stoppedURL := "redis://" + stopped.Addr()
	var (
		depth map[string]int64
		wait  float64
	)
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		ms := tel.metrics(t)
		depth = map[string]int64{}
		for _, p := range gauge[int64](t, ms["redlock.node.pending"]) {
			node, _ := p.Attributes.Value("redlock.node")
			depth[node.AsString()] = p.Value
		}
		wait = 0
		for _, p := range gauge[float64](t, ms["redlock.node.pending.wait"]) {
			if node, _ := p.Attributes.Value("redlock.node"); node.AsString() == stoppedURL {
				wait = p.Value
			}
		}
		if depth[stoppedURL] > 0 && wait > 0 {
			break
		}
	}
	wg.Wait() // the two other nodes are a quorum: the calls to the stopped one wait

	require.Len(t, depth, 3, "one point per node: %v", depth)
	for k := range depth {
		assert.NotContains(t, k, password)
	}
	assert.Positive(t, depth[stoppedURL], "the stopped node's queue: %v", depth)
	assert.Positive(t, wait, "the oldest queued command's wait, in seconds")
	// Once the TryLocks and Unlocks returned, a quorum of the nodes that
	// answer, which is both, has answered each of their calls.
	for _, p := range gauge[int64](t, tel.metrics(t)["redlock.node.pending"]) {
		if node, _ := p.Attributes.Value("redlock.node"); node.AsString() != stoppedURL {
			assert.Zero(t, p.Value, "a node that answers has nothing queued: %s", node.AsString())
		}
	}

	require.NoError(t, stopped.Resume())
	require.NoError(t, c.Close())
	assert.Empty(t, gauge[int64](t, tel.metrics(t)["redlock.node.pending"]), "a closed Client is not read")
}

// A lock taken inside Do's function, on the context Do gives it, is its own:
// it does not rewrite the Do span's votes and token, which stay those of the
// Do's lock, whether it is taken by TryLock or by Lock.
func TestNestedLockKeepsDoAttributes(t *testing.T) {
	tel := newTelemetry(t)
	c, err := redlock.Open("memory", []string{"nested-1", "nested-2", "nested-3"}, tel.option(), redlock.WithFencing())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	for range 5 { // the other key's tokens run ahead of the Do's
		l, err := c.TryLock(ctx, "other")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	}
	var inner []int64
	err = c.Do(ctx, "outer", func(ctx context.Context) error {
		l, err := c.TryLock(ctx, "other")
		if err != nil {
			return err
		}
		inner = append(inner, int64(l.Token()))
		if err := l.Unlock(ctx); err != nil {
			return err
		}
		if l, err = c.Lock(ctx, "other"); err != nil {
			return err
		}
		inner = append(inner, int64(l.Token()))
		return l.Unlock(ctx)
	})
	require.NoError(t, err)
	var do, doLock sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == "redlock.Do" {
			do = s
		}
	}
	require.NotNil(t, do)
	for _, s := range tel.spans.Ended() {
		if k, _ := attr(s.Attributes(), "redlock.key"); s.Name() == "redlock.Lock" && k.AsString() == "outer" {
			doLock = s
		}
	}
	require.NotNil(t, doLock)
	want, ok := attr(doLock.Attributes(), "redlock.fencing.token")
	require.True(t, ok)
	got, ok := attr(do.Attributes(), "redlock.fencing.token")
	require.True(t, ok, "the Do span has its lock's token")
	assert.Equal(t, want.AsInt64(), got.AsInt64(), "the Do span's token is its lock's, not one of %v taken inside it", inner)
	for _, k := range []string{"redlock.nodes.granted", "redlock.quorum"} {
		w, _ := attr(doLock.Attributes(), k)
		g, _ := attr(do.Attributes(), k)
		assert.Equal(t, w, g, "the Do span's %s is its lock's", k)
	}
}

// Two Clients that share one observer and a node add up in the gauges: the
// node's depth is the sum of theirs, not the last one read.
func TestNodeQueueGaugesAddUp(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	obs := redlock.WithObserver(redlockotel.NewObserver(redlockotel.WithTracerProvider(tel.tp), redlockotel.WithMeterProvider(tel.mp)))
	var clients []*redlock.Client
	for _, prefix := range []string{"a:", "b:"} {
		c, err := redlock.Open("goredis", redistest.Addrs(servers), obs, redlock.WithKeyPrefix(prefix),
			redlock.WithTTL(20*time.Second), redlock.WithNodeTimeout(3*time.Second))
		require.NoError(t, err)
		defer c.Close()
		connectAll(t, c)
		clients = append(clients, c)
	}
	stopped := servers[0]
	require.NoError(t, stopped.Pause())
	defer stopped.Resume()
	queueOn(t, clients, func(int) int { return 16 })
	depthOf := func(c *redlock.Client) int64 { return depthOn(c, stopped.Addr()) }
	a, b := depthOf(clients[0]), depthOf(clients[1])
	require.Positive(t, a)
	require.Positive(t, b)
	got, _ := pendingOn(t, tel, stopped.Addr())
	require.Equal(t, [2]int64{a, b}, [2]int64{depthOf(clients[0]), depthOf(clients[1])}, "the queues moved while read")
	assert.Equal(t, a+b, got, "the stopped node's depth over both Clients")
}
