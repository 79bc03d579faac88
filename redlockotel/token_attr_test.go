package redlockotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A fencing token is a uint64: one above 2^63-1 (from counters set that
// high, as WithFencing allows up to 2^64-1) was set on the spans as a
// negative int64 (9223372036854775808 as -9223372036854775808). It is its
// decimal text there; a token an int64 holds stays an int64.
func TestFencingTokenAttribute(t *testing.T) {
	for _, tc := range []struct {
		counter string
		want    attribute.Value
	}{
		{"41", attribute.Int64Value(42)},
		{"9223372036854775806", attribute.Int64Value(9223372036854775807)},
		{"9223372036854775807", attribute.StringValue("9223372036854775808")},
		{"18446744073709551614", attribute.StringValue("18446744073709551615")},
	} {
		t.Run(tc.counter, func(t *testing.T) {
			servers := redistest.NewServers(t, 3)
			for _, s := range servers {
				_, err := s.Do(t.Context(), "SET", driver.FenceKey("k"), tc.counter)
				require.NoError(t, err)
			}
			tel := newTelemetry(t)
			c := open(t, redistest.Addrs(servers), tel.option(), redlock.WithFencing())
			l, err := c.TryLock(context.Background(), "k")
			require.NoError(t, err)
			require.NoError(t, l.Extend(t.Context(), c.TTL()))
			require.NoError(t, l.Unlock(t.Context()))
			spans := tel.spans.Ended()
			require.Len(t, spans, 3, "TryLock, Extend, Unlock")
			for _, s := range spans {
				got, ok := attr(s.Attributes(), "redlock.fencing.token")
				if assert.True(t, ok, "%s has no token", s.Name()) {
					assert.Equal(t, tc.want, got, "%s's token (the lock's: %d)", s.Name(), l.Token())
				}
			}
		})
	}
}
