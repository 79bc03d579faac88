package goredis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// A pub/sub connection that stays idle is sent a PING (pubSubConn.Receive)
// and, when the server answers it, kept: after the PING and longer than
// pubSubPong, the server still has the node's one subscribed connection, the
// same one, and a release published then is heard. (The check finds a hung
// server; it must not drop a healthy connection, which would cost every
// waiter a wake and a resubscription every few seconds.)
func TestPubSubIdlePingKeepsConnection(t *testing.T) {
	srv := redistest.NewServer(t)
	n, err := Driver{}.Open(srv.Addr())
	require.NoError(t, err)
	defer n.Close()
	notify := make(chan struct{}, 1)
	cancel, err := n.(driver.Notifier).Subscribe(t.Context(), "idle", notify)
	require.NoError(t, err)
	defer cancel()

	// subscribed returns the ID and last command of the server's one
	// connection with a shard subscription.
	subscribed := func() (id, cmd string) {
		v, err := srv.Do(t.Context(), "CLIENT", "LIST")
		require.NoError(t, err)
		var found []string
		for line := range strings.Lines(fmt.Sprint(v)) {
			if !strings.Contains(line, " ssub=1 ") {
				continue
			}
			found = append(found, line)
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "id="); ok {
					id = v
				}
				if v, ok := strings.CutPrefix(f, "cmd="); ok {
					cmd = v
				}
			}
		}
		require.Len(t, found, 1, "connections with a shard subscription")
		return id, cmd
	}
	first, _ := subscribed()
	require.Eventually(t, func() bool { _, cmd := subscribed(); return cmd == "ping" },
		pubSubIdle+5*time.Second, 50*time.Millisecond, "no PING on the idle pub/sub connection")
	time.Sleep(pubSubPong + time.Second) // a PING unanswered would have dropped it by now
	id, _ := subscribed()
	require.Equal(t, first, id, "the pub/sub connection was replaced")
	_, err = srv.Do(t.Context(), "SPUBLISH", driver.ReleaseChannel("idle"), "")
	require.NoError(t, err)
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("a release published after the PINGs was not heard")
	}
}
