package goredis_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
)

// TestNewClusterClientSeedDownAtFirstSubscribe is
// TestNewClusterClientSeedDownAtFirstUse with the node's first call a
// Subscribe (a waiter's subscription on a node whose first SET had not yet
// started, or still waited for the seeds' check): the subscription reads
// the slot map through the caller's client (MasterForKey), which makes node
// clients for the seeds it tries, the down seed's among them when it tries
// it first. That node client must be gated as the later ones are: once the
// seed comes up and the client falls back to its seeds, the node must not
// lock on the second cluster while a Client over the first holds the key.
func TestNewClusterClientSeedDownAtFirstSubscribe(t *testing.T) {
	t.Parallel()
	seedDownAtFirstUse(t, func(t *testing.T, n driver.Node) {
		// go-redis tries the seeds in a random order: the down seed first
		// in about half of the runs.
		stop, err := n.(driver.Notifier).Subscribe(t.Context(), "first", make(chan struct{}, 1))
		require.NoError(t, err)
		stop()
	})
}
