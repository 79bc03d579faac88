package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TestVerboseExtendTellsWhatHappened feeds lockEvents the story of a lock
// whose extension fails and is retried, then which expires, and whose
// release then finds the key still on a quorum (within the drift, before
// the nodes expire it). -v said "redlock: lock lost" for the retried
// extension (its error carries the ErrLockLost sentinel, with the nodes'
// errors on the lines after), then the loss, then "released k", though
// nothing held was released. It now says that the extension is retried
// and why, on one line, escaped; the loss once; and no release.
func TestVerboseExtendTellsWhatHappened(t *testing.T) {
	var stderr bytes.Buffer
	e := &lockEvents{verbose: true, stderr: messageWriter{&stderr}}
	ctx := context.Background()
	votes := &redlock.VoteError{Granted: 1, Failed: 2, Needed: 2, Nodes: 3}
	_, end := e.Extend(ctx, redlock.ExtendStart{Key: "k", TTL: 6 * time.Second})
	end(redlock.ExtendDone{
		Key: "k", TTL: 6 * time.Second, Until: time.Now().Add(5 * time.Second),
		Votes: redlock.Votes{Granted: 1, Failed: 2, Quorum: 2, Nodes: 3},
		Err: errors.Join(redlock.ErrLockLost, votes,
			&redlock.NodeError{Addr: "n1", Err: errors.New("i/o timeout")},
			&redlock.NodeError{Addr: "n2", Err: errors.New("LOADING Redis is loading\r\x1b[2J")}),
	})
	e.LockEnd(ctx, redlock.LockEnd{Key: "k", How: redlock.EndExpired, Held: 6 * time.Second})
	_, uend := e.Unlock(ctx, redlock.UnlockStart{Key: "k"})
	uend(redlock.UnlockDone{Key: "k", Votes: redlock.Votes{Granted: 3, Nodes: 3, Quorum: 2}})

	out := stderr.String()
	want := `redlock: extending k failed (1 of 3 nodes agreed, 2 needed); retrying while its validity lasts (`
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, want) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no line %q...:\n%s", want, out)
	}
	if cause := `): node n1: i/o timeout; node n2: LOADING Redis is loading\r\x1b[2J` + "\n"; !strings.HasSuffix(line, cause) {
		t.Errorf("the retried extension's line does not end with its cause %q:\n%s", cause, out)
	}
	if strings.Contains(out, "lock lost") {
		t.Errorf("-v says \"lock lost\" of an extension that is retried:\n%s", out)
	}
	if n := strings.Count(out, "lost k"); n != 1 {
		t.Errorf("the loss told %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "released k") {
		t.Errorf("-v says released of a lock that had expired before its release:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("%d lines, want 2 (the failed extension, the loss):\n%s", n, out)
	}
}
