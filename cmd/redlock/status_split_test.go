//go:build unix

package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestStatusUnknownWhenEvenNodesSplit: with 4 nodes, a key on 2 of them (a
// lock that lost half its nodes, or two half-taken attempts) is neither
// held (2 < quorum 3) nor free (2 < 3): status says unknown although every
// node answered, and exits with 0, since a quorum answered. Its help said
// "unknown (neither: too few nodes answered)", which is not the reason here.
func TestStatusUnknownWhenEvenNodesSplit(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 4)
	for _, s := range servers[:2] {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := s.Do(ctx, "SET", "split", "someone", "PX", "60000")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	r := invoke(t, "", "status", "--json", "--timeout", "5s", "--nodes", addrs, "split")
	if r.code != exitOK {
		t.Fatalf("status: want exit %d (every node answered), got %v", exitOK, r)
	}
	var rep struct {
		Quorum int `json:"quorum"`
		Keys   []struct {
			State    string `json:"state"`
			HeldOn   int    `json:"held_on"`
			Answered int    `json:"answered"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Keys) != 1 {
		t.Fatalf("status --json: %v in %q", err, r.stdout)
	}
	if k := rep.Keys[0]; k.State != keyUnknown || k.HeldOn != 2 || k.Answered != 4 || rep.Quorum != 3 {
		t.Errorf("a key on 2 of 4 nodes: want unknown, held on 2, 4 answered, quorum 3; got %+v, quorum %d", k, rep.Quorum)
	}
}
