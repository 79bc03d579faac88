package rueidiscoretest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// A call that goes again because the server closed its connection (see
// rueidiscore's do) ends by its first send's network deadline
// (driver.WithNetworkTimeout), as one call on a driver.Queuer must: its
// repeats, and the new client they may wait for, get no network timeout of
// their own. Over a link whose every reply takes a second
// (testproxy.ReplyDelay), a call with a network timeout of 1.5s whose
// connections break 300ms in cannot be answered within it: its repeat needs
// a new connection's HELLO, then its command, two replies. Before, each
// repeat and each connection's creation had a network timeout of its own,
// and the call was answered (true) about 2.3s after it began. A round in which the
// connections broke too late to prove anything (a loaded machine; the first
// send's reply may have come) is made again, three at most.
func repeatWithinNetworkTimeout(t *testing.T, tg target) {
	const (
		reply   = time.Second
		timeout = 1500 * time.Millisecond
		broken  = 300 * time.Millisecond
		rounds  = 3
	)
	srv := redistest.NewServer(t)
	// The repeat of a SET NX runs driver.SetNXAgainScript: loaded, its
	// EVALSHA needs no EVAL after it, and a repeat given a network timeout
	// of its own is answered.
	_, err := srv.Do(t.Context(), "SCRIPT", "LOAD", driver.SetNXAgainScript().Source())
	require.NoError(t, err)
	p := testproxy.New(t, srv.Addr(), testproxy.ReplyDelay(reply))
	n := tg.open(t, p.Addr())
	for range rounds {
		// A client, made and answering, before the call.
		_, err := n.SetNX(driver.WithNetworkTimeout(t.Context(), 20*time.Second), key(), "v", time.Minute)
		require.NoError(t, err, "a call with a long network timeout")
		dropped := make(chan time.Time, 1)
		go func() {
			time.Sleep(broken)
			p.Drop()
			dropped <- time.Now()
		}()
		start := time.Now()
		ok, err := n.SetNX(driver.WithNetworkTimeout(t.Context(), timeout), key(), "v", time.Minute)
		took := time.Since(start)
		if at := <-dropped; at.Sub(start) >= reply/2 {
			continue // the first send may have been answered: proves nothing
		}
		require.ErrorIs(t, err, context.DeadlineExceeded,
			"a call with a network timeout of %v whose connections broke %v in, over a link whose replies take %v: = %v, %v after %v; want its network timeout's end: a repeat cannot be answered within it",
			timeout, broken, reply, ok, err, took)
		require.Less(t, took, timeout+slack, "the call returned after its network timeout")
		return
	}
	t.Fatalf("%d rounds in which the connections broke too late", rounds)
}
