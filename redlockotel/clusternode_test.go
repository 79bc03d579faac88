package redlockotel_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// A node that is a whole Redis Cluster is named in redlock.node as in errors
// and logs, without credentials: its seeds and cluster=true. It was named by
// its first seed alone ("redis://127.0.0.1:7000"), the address of one shard's
// primary, as if it were that one server, and unlike the node in the error
// or log line of the same failure.
func TestClusterNodeAttribute(t *testing.T) {
	const password = "otel-cluster-pw-9"
	cluster := redistest.NewCluster(t, 3, redistest.WithServerOptions(redistest.WithPassword(password)))
	servers := redistest.NewServers(t, 2)
	tel := newTelemetry(t)
	c := open(t, []string{cluster.URL(), servers[0].Addr(), servers[1].Addr()}, tel.option())
	ctx := t.Context()
	l, err := c.TryLock(ctx, "otel-cluster")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))

	seeds := cluster.Seeds()
	want := "redis://" + seeds[0] + "?cluster=true&addr=" + strings.Join(seeds[1:], "&addr=")
	nodes := map[string]bool{}
	for _, p := range histogram(t, tel.metrics(t)["redlock.node.duration"]) {
		node, _ := p.Attributes.Value("redlock.node")
		nodes[node.AsString()] = true
		assert.NotContains(t, node.AsString(), password)
		assert.NotContains(t, node.AsString(), "xxxxx", "no credentials, not even masked")
	}
	assert.True(t, nodes[want], "the cluster node is %s: %v", want, nodes)
	assert.False(t, nodes["redis://"+seeds[0]], "the cluster node is not named as its first seed's server: %v", nodes)
	assert.Len(t, nodes, 3, "one series per node: %v", nodes)
}
