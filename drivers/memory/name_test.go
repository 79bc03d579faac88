package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// TestNameHidesPassword: a memory node named by an address with credentials
// (Open, as a test opens the addresses of its configuration with the
// driver "memory", or WithName) never shows the password, in String, in
// any fmt verb, or in redlock's errors (a *redlock.NodeError names the node
// by its String), as the driver checklist asks of every driver: before, the
// name was shown as given. Names without user information or a query stay
// as they are, and two addresses still name two stores.
func TestNameHidesPassword(t *testing.T) {
	const secret = "s3cret-never-shown"
	for _, addr := range []string{
		"redis://locker:" + secret + "@10.0.0.1:6379/0" + t.Name(),
		"locker:" + secret + "@10.0.0.2:6379" + t.Name(),
		"redis://10.0.0.3:6379?password=" + secret + t.Name(),
	} {
		n, err := memory.Open(addr)
		require.NoError(t, err)
		named := memory.New(memory.WithName(addr))
		for _, shown := range []string{n.String(), fmt.Sprint(n), fmt.Sprintf("%+v %#v %s %q", n, n, n, n), named.String()} {
			assert.NotContains(t, shown, secret, "the name of a node opened at %q", addr)
		}
		assert.Contains(t, n.String(), "10.0.0.", "the name still says which node")

		// Through redlock: a node down, the others too.
		others := []*memory.Node{memory.New(), memory.New()}
		c, err := redlock.New([]driver.Node{n, others[0], others[1]})
		require.NoError(t, err)
		n.SetDown(true)
		others[0].SetDown(true)
		_, err = c.TryLock(context.Background(), "k")
		require.Error(t, err)
		var ne *redlock.NodeError
		require.True(t, errors.As(err, &ne))
		for _, shown := range []string{err.Error(), fmt.Sprint(c), fmt.Sprintf("%+v", c)} {
			assert.NotContains(t, shown, secret)
		}
		n.SetDown(false)
		require.NoError(t, c.Close())
	}
	for _, name := range []string{"a", "memory-node-7", "TestX/sub_test", "h:6379"} {
		assert.Equal(t, name, memory.New(memory.WithName(name)).String())
	}
	a, err := memory.Open("redis://u:a@h:1" + t.Name())
	require.NoError(t, err)
	b, err := memory.Open("redis://u:b@h:1" + t.Name())
	require.NoError(t, err)
	_, err = a.SetNX(context.Background(), "k", "v", 1e9)
	require.NoError(t, err)
	assert.False(t, b.Holds("k"), "two addresses, two stores")
	a.Delete("k")
}
