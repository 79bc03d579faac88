package redlockotel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// A node's error reply gives error.type its Redis code, whatever the driver's
// client calls its type: READONLY (a failover turned the node into a
// replica), OOM, NOPERM, CLUSTERDOWN are what an alert on redlock.node.duration
// needs to tell apart. go-redis gave *proto.ReadOnlyError and *proto.OOMError,
// redigo redis.Error for both, rueidis *rueidis.RedisError for both, valkey-go
// *valkey.ValkeyError for both (see errortype_internal_test.go for their shapes).
func TestNodeErrorTypeIsRedisCode(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	ctx := t.Context()
	replica, full := servers[0], servers[1]
	_, err := replica.Do(ctx, "REPLICAOF", "127.0.0.1", "1") // a replica of nothing: read-only
	require.NoError(t, err)
	_, err = full.Do(ctx, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	require.NoError(t, err)
	_, err = full.Do(ctx, "CONFIG", "SET", "maxmemory", "1")
	require.NoError(t, err)

	tel := newTelemetry(t)
	c := open(t, []string{replica.Addr(), full.Addr(), servers[2].Addr()}, tel.option())
	_, err = c.TryLock(ctx, "otel-error-type")
	require.Error(t, err, "two nodes of three refuse every write")

	types := map[string]string{} // node: error.type of its acquire
	for _, p := range histogram(t, tel.metrics(t)["redlock.node.duration"]) {
		node, _ := p.Attributes.Value("redlock.node")
		op, _ := p.Attributes.Value("redlock.operation")
		et, _ := p.Attributes.Value("error.type")
		if op.AsString() == "acquire" {
			types[node.AsString()] = et.AsString()
		}
	}
	assert.Equal(t, "READONLY", types[replica.Addr()], "the replica's acquire: %v", types)
	assert.Equal(t, "OOM", types[full.Addr()], "the full node's acquire: %v", types)
	assert.Empty(t, types[servers[2].Addr()], "the healthy node's acquire: %v", types)

	// The attempt failed for errors that retrying cannot fix: its span and
	// its point of redlock.acquire.duration name the first node's to
	// answer (either), not not_obtained.
	spans := tel.spans.Ended()
	require.Len(t, spans, 1)
	et, _ := attr(spans[0].Attributes(), "error.type")
	assert.Contains(t, []string{"READONLY", "OOM"}, et.AsString(), "the TryLock span")
	for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
		v, _ := p.Attributes.Value("error.type")
		assert.Equal(t, et.AsString(), v.AsString(), "the attempt's point")
	}
}
