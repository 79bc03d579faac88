package redlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestBadCallOptionIsErrorOutcome: a TryLock, Lock or Do given a bad per-call
// option (here a negative TTL) is bad input, which redlock.acquire.duration
// counts with redlock.outcome = error, as it does an empty key; its spans
// have status Error. Before, such calls left no span and no measure.
func TestBadCallOptionIsErrorOutcome(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	c := open(t, redistest.Addrs(servers), tel.option())
	ctx := t.Context()
	bad := redlock.WithTTL(-time.Second)
	_, err := c.TryLock(ctx, "otel-bad", bad)
	require.Error(t, err)
	_, err = c.Lock(ctx, "otel-bad", bad)
	require.Error(t, err)
	err = c.Do(ctx, "otel-bad", func(context.Context) error { return nil }, bad)
	require.Error(t, err)

	names := map[string]int{}
	for _, s := range tel.spans.Ended() {
		names[s.Name()]++
		assert.Equal(t, codes.Error, s.Status().Code, s.Name())
		assert.Contains(t, s.Status().Description, "TTL -1s is not positive", s.Name())
	}
	assert.Equal(t, map[string]int{"redlock.TryLock": 3, "redlock.Lock": 2, "redlock.Do": 1}, names)
	outcomes := map[string]uint64{}
	for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
		v, _ := p.Attributes.Value("redlock.outcome")
		outcomes[v.AsString()] += p.Count
	}
	assert.Equal(t, map[string]uint64{"error": 3}, outcomes)
}
