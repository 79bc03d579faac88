package redlockotel_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// One server under two addresses: the attempt's span, with status Error,
// has error.type same_server, and so has its point of
// redlock.acquire.duration.
func TestSameServerErrorType(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	twice := strings.Replace(servers[0].Addr(), "127.0.0.1", "localhost", 1)
	tel := newTelemetry(t)
	c := open(t, []string{servers[0].Addr(), twice, servers[1].Addr()}, tel.option())
	_, err := c.TryLock(t.Context(), "otel-same-server")
	require.ErrorIs(t, err, redlock.ErrSameServer)

	var found bool
	for _, s := range tel.spans.Ended() {
		if s.Name() != "redlock.TryLock" {
			continue
		}
		found = true
		assert.Equal(t, codes.Error, s.Status().Code)
		et, _ := attr(s.Attributes(), "error.type")
		assert.Equal(t, "same_server", et.AsString())
	}
	assert.True(t, found, "no redlock.TryLock span")
	var types []string
	for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
		v, _ := p.Attributes.Value("error.type")
		types = append(types, v.AsString())
	}
	assert.Equal(t, []string{"same_server"}, types)
}
