//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// status says so when a node holds the key without an expiry (TTL "none"):
// a lock's key always has one, so such a key was written by something else
// under the lock's name and keeps the lock from being taken until deleted.
// A key with an expiry, as a lock's, gets no such note.
func TestStatusNotesKeyWithoutExpiry(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for i, s := range servers {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := s.Do(ctx, "SET", "plain", "x")
		if err == nil && i < 2 {
			_, err = s.Do(ctx, "SET", "lockish", "v", "PX", "60000")
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	r := invoke(t, "", "status", "--timeout", "5s", "--nodes", addrs, "plain", "lockish")
	if r.code != exitOK {
		t.Fatalf("status: want exit %d, got %v", exitOK, r)
	}
	var plain, lockish string
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "plain: "):
			plain = line
		case strings.HasPrefix(line, "lockish: "):
			lockish = line
		}
	}
	if !strings.Contains(plain, "held on 3 of 3 nodes") || !strings.Contains(plain, "no expiry on 3 of them: not a lock's key") {
		t.Errorf("a key without expiry on every node: want its verdict to say held on 3 and no expiry on 3, got %q in\n%s", plain, r.stdout)
	}
	if !strings.Contains(lockish, "held on 2 of 3 nodes") || strings.Contains(lockish, "no expiry") {
		t.Errorf("a key with an expiry: want held on 2 and no note, got %q in\n%s", lockish, r.stdout)
	}
}
