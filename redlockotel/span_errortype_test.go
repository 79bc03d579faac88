package redlockotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A span that ends with status Error has error.type, as OpenTelemetry's
// "Recording errors" asks (set the status to Error and set error.type), and
// so has a failed attempt's point of redlock.acquire.duration (its metrics
// SHOULD have error.type too): few values, the nodes' verdict or the
// redlock error the caller got (a TryLock of a key held by another is
// not_obtained, one with two nodes of three down unavailable, a second
// Unlock already_unlocked), else the cause's class (a TryLock whose
// context had ended is canceled, one on a closed Client closed). A span
// that succeeded has none. Without it a trace backend groups failed spans
// only by the status description, the error's free text, and the metric
// cannot tell a timeout from a closed Client under outcome=error.
func TestSpanErrorType(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	c := open(t, redistest.Addrs(servers), tel.option())
	holder := open(t, redistest.Addrs(servers))
	ctx := t.Context()
	held, err := holder.TryLock(ctx, "otel-span-busy")
	require.NoError(t, err)
	defer held.Unlock(ctx)

	_, err = c.TryLock(ctx, "otel-span-busy")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	l, err := c.TryLock(ctx, "otel-span-free")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	require.ErrorIs(t, l.Unlock(ctx), redlock.ErrAlreadyUnlocked)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.TryLock(canceled, "otel-span-canceled")
	require.ErrorIs(t, err, context.Canceled)
	for _, s := range servers[:2] {
		require.NoError(t, s.Kill())
	}
	_, err = c.TryLock(ctx, "otel-span-down")
	require.ErrorIs(t, err, redlock.ErrUnavailable)
	require.NoError(t, c.Close())
	_, err = c.TryLock(ctx, "otel-span-closed")
	require.ErrorIs(t, err, redlock.ErrClosed)

	got := map[string][]string{} // span name: error.type of each, "" for none
	for _, s := range tel.spans.Ended() {
		et, has := attr(s.Attributes(), "error.type")
		assert.Equal(t, s.Status().Code == codes.Error, has,
			"%s (status %v): error.type %q: only and always on a failed span", s.Name(), s.Status().Code, et.AsString())
		got[s.Name()] = append(got[s.Name()], et.AsString())
	}
	assert.Equal(t, map[string][]string{
		"redlock.TryLock": {"not_obtained", "", "canceled", "unavailable", "closed"},
		"redlock.Unlock":  {"", "already_unlocked"},
	}, got)

	points := map[string]uint64{} // outcome/error.type: attempts
	for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
		oc, _ := p.Attributes.Value("redlock.outcome")
		et, _ := p.Attributes.Value("error.type")
		points[oc.AsString()+"/"+et.AsString()] += p.Count
	}
	assert.Equal(t, map[string]uint64{
		"granted/": 1, "not_obtained/not_obtained": 1, "unavailable/unavailable": 1,
		"error/canceled": 1, "error/closed": 1,
	}, points)
}
