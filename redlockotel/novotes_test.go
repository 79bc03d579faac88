package redlockotel_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A call that sent no round to the nodes has no votes: its span carries no
// redlock.quorum nor redlock.nodes.granted, rather than a quorum of 0 (an
// Extend after Unlock, a TryLock of a bad key), while a call that sent one
// carries the Client's quorum.
func TestNoVotesWithoutRound(t *testing.T) {
	tel := newTelemetry(t)
	nodes := []driver.Node{memory.New(), memory.New(), memory.New()}
	c, err := redlock.New(nodes, tel.option())
	require.NoError(t, err)
	defer c.Close()
	l, err := c.TryLock(t.Context(), "novotes")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(t.Context()))
	require.Error(t, l.Extend(t.Context(), redlock.DefaultTTL))
	_, err = c.TryLock(t.Context(), "")
	require.Error(t, err)

	var sent, unsent []trace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == "redlock.Extend" || s.Status().Description != "" && s.Name() == "redlock.TryLock" {
			unsent = append(unsent, s)
		} else {
			sent = append(sent, s)
		}
	}
	require.Len(t, unsent, 2, "the Extend and the TryLock of a bad key")
	for _, s := range unsent {
		for _, k := range []string{"redlock.quorum", "redlock.nodes.granted"} {
			v, ok := attr(s.Attributes(), k)
			require.False(t, ok, "%s (%s) sent nothing, has %s = %v", s.Name(), s.Status().Description, k, v.Emit())
		}
	}
	require.Len(t, sent, 2, "the granted TryLock and its Unlock")
	for _, s := range sent {
		v, ok := attr(s.Attributes(), "redlock.quorum")
		require.True(t, ok, "%s", s.Name())
		require.EqualValues(t, 2, v.AsInt64(), "%s", s.Name())
	}
}
