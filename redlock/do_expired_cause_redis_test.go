package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Every server is paused (SIGSTOP) while fn runs: each extension of Do
// times out on every node, and the lock's validity ends. The servers are
// resumed once the key's TTL has run out on them, and fn returns: Do's
// release then finds the key gone everywhere. Do's error must say why the
// lock was lost, the extension's failure (its votes: every node failed, so
// ErrUnavailable; the nodes' timeouts), with the release's outcome after it.
// Before, it was the release's account alone ("lock lost: 0 of 3 nodes
// agreed, 2 needed (2 refused, 0 failed)"), as if the nodes had refused the
// lock: the extensions' timeouts were nowhere in it.
func TestRedisDoExpiredSaysWhy(t *testing.T) {
	const (
		ttl         = 2 * time.Second
		nodeTimeout = 300 * time.Millisecond
	)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			servers := redistest.NewServers(t, 3)
			t.Cleanup(func() {
				for _, s := range servers {
					s.Resume()
				}
			})
			c := openRedis(t, name, servers, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
			key := "expired-" + name
			var (
				canceled bool
				cause    error
			)
			err := c.Do(t.Context(), key, func(ctx context.Context) error {
				// Every SET of the acquisition answered before fn ran: the
				// key's TTL on the nodes ends by ttl from now.
				keyEnd := time.Now().Add(ttl)
				// The acquisition's SET that the grant did not wait for
				// must be on its node before the pause, or it would set
				// the key again at the resume.
				deadline := time.Now().Add(ttl / 4) // before the first extension, at ttl/3
				for keysLeft(t, servers, key) < len(servers) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := keysLeft(t, servers, key); n < len(servers) {
					return errors.New("the key is on fewer than every server before the pause")
				}
				for _, s := range servers {
					if err := s.Pause(); err != nil {
						return err
					}
				}
				select {
				case <-ctx.Done():
					canceled, cause = true, context.Cause(ctx)
				case <-time.After(3 * ttl):
				}
				// The key's TTL has run out on every node by then: the
				// extensions queued during the pause find nothing.
				time.Sleep(time.Until(keyEnd.Add(200 * time.Millisecond)))
				for _, s := range servers {
					if err := s.Resume(); err != nil {
						return err
					}
				}
				return nil
			})
			require.True(t, canceled, "fn's context did not end with every server paused: Do returned %v", err)
			require.ErrorIs(t, cause, redlock.ErrLockLost, "fn's context's cause")
			require.ErrorIs(t, err, redlock.ErrLockLost)
			t.Logf("Do: %v", err)
			// The loss's cause comes first: the extension's votes, nodes
			// that failed (a timeout; the extension decides once too many
			// have for a quorum, before the last one's), none that
			// refused, which match ErrUnavailable.
			var ve *redlock.VoteError
			require.ErrorAs(t, err, &ve)
			require.Greater(t, ve.Failed, ve.Nodes-ve.Needed, "the first votes in Do's error are the extension's, too many nodes failed: %v", err)
			require.Zero(t, ve.Refused, "the first votes in Do's error are the extension's, none refused: %v", err)
			require.ErrorIs(t, err, redlock.ErrUnavailable, "every node failed the extension")
			var ne *redlock.NodeError
			require.ErrorAs(t, err, &ne)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the extensions' calls timed out")
			// The release's outcome, the key found gone, after it, and the
			// loss told once.
			require.Contains(t, err.Error(), "the release then:", "Do's error tells the release apart from the loss's cause")
			require.Equal(t, 1, strings.Count(err.Error(), redlock.ErrLockLost.Error()), "Do's error says %q more than once: %q", redlock.ErrLockLost, err)
		})
	}
}
