package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// TestLeftKeysTells checks what the soaks report of a key left after
// everyone released it (nodes.leftKeys): a key written just now with a TTL
// has a positive PTTL; one written without a TTL says -1.
func TestLeftKeysTells(t *testing.T) {
	t.Parallel()
	ns := &nodes{servers: redistest.NewServers(t, 2)}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := ns.servers[0].Do(ctx, "SET", "left", "v", "PX", "60000")
	require.NoError(t, err)
	_, err = ns.servers[1].Do(ctx, "SET", "left", "v")
	require.NoError(t, err)
	h := ns.holders(t, "left")
	require.Equal(t, []int{0, 1}, h)
	got := ns.leftKeys(t, "left", h, time.Now())
	require.Regexp(t, `^server 0: PTTL [1-6][0-9]{4} \(<nil>\), idle [0-9]+s \(<nil>\); server 1: PTTL -1 \(<nil>\), idle [0-9]+s \(<nil>\), [0-9.]+m?s after the release$`, got)
}
