package redlockotel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A span that ends with status Error has error.type, as OpenTelemetry's
// "Recording errors" asks (set the status to Error and set error.type), with
// the few values of the redlock error the caller got: a TryLock of a key
// held by another is not_obtained, one with two nodes of three down
// unavailable, a second Unlock already_unlocked; a span that succeeded has
// none. Without it a trace backend cannot group failed spans by cause but by
// the status description, the error's free text.
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
	for _, s := range servers[:2] {
		require.NoError(t, s.Kill())
	}
	_, err = c.TryLock(ctx, "otel-span-down")
	require.ErrorIs(t, err, redlock.ErrUnavailable)

	got := map[string][]string{} // span name: error.type of each, "" for none
	for _, s := range tel.spans.Ended() {
		et, has := attr(s.Attributes(), "error.type")
		assert.Equal(t, s.Status().Code == codes.Error, has,
			"%s (status %v): error.type %q: only and always on a failed span", s.Name(), s.Status().Code, et.AsString())
		got[s.Name()] = append(got[s.Name()], et.AsString())
	}
	assert.Equal(t, map[string][]string{
		"redlock.TryLock": {"not_obtained", "", "unavailable"},
		"redlock.Unlock":  {"", "already_unlocked"},
	}, got)
}
