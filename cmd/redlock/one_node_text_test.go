//go:build unix

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestOneNodeCounted: with one node, what run, hold, status and doctor
// print counts it as "1 node", not "1 nodes", as the votes' summary and the
// extension and loss lines do since nodesWord: status's verdict line ("held
// on 0 of 1 nodes") and its error, the wait's line, doctor's duplicates and
// quorum checks, and the release's lines still said "of 1 nodes".
func TestOneNodeCounted(t *testing.T) {
	t.Parallel()
	servers, addr := nodes(t, 1)
	r := invoke(t, "", "status", "--nodes", addr, "one")
	if !strings.Contains(r.stdout, "one: free: held on 0 of 1 node, 1 answered") {
		t.Errorf("status with one node: want %q, got %v", "held on 0 of 1 node,", r)
	}
	rep, r := doctorJSON(t, addr)
	if c, ok := findCheck(rep.Checks, "duplicates", statusOK); !ok || c.Message != "1 distinct server (run_id)" {
		t.Errorf("doctor with one node: want the duplicates check %q, got %+v\n%v", "1 distinct server (run_id)", rep.Checks, r)
	}
	if _, err := servers[0].Do(t.Context(), "SET", "one", "elsewhere", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	r = invoke(t, "", "hold", "-v", "--wait", "300ms", "--nodes", addr, "one")
	if !strings.Contains(r.stderr, "(held elsewhere: 1 of 1 node refused, 0 granted, 1 needed)") {
		t.Errorf("hold -v with one node, the key held elsewhere: want the wait's line to count 1 node, got %v", r)
	}
	servers[0].Close()
	r = invoke(t, "", "status", "--timeout", "500ms", "--nodes", addr, "one")
	if !strings.Contains(r.stderr, "fewer than a quorum (1) of the 1 node answered") || !strings.Contains(r.stdout, "held on 0 of 1 node, 0 answered") {
		t.Errorf("status with its one node down: want it counted as 1 node, got %v", r)
	}
	rep, r = doctorJSON(t, addr, "--timeout", "500ms")
	if c, ok := findCheck(rep.Checks, "quorum", statusFail); !ok || !strings.HasPrefix(c.Message, "only 0 of 1 node reachable") {
		t.Errorf("doctor with its one node down: want the quorum check to count 1 node, got %+v\n%v", rep.Checks, r)
	}
	// The release's lines, from the command's observer.
	var stderr bytes.Buffer
	e := &lockEvents{verbose: true, stderr: &stderr}
	for _, d := range []redlock.UnlockDone{
		{Key: "one", Votes: redlock.Votes{Nodes: 1, Quorum: 1, Failed: 1}, Err: redlock.ErrUnavailable},
		{Key: "one", Votes: redlock.Votes{Nodes: 1, Quorum: 1, Refused: 1}, Err: redlock.ErrLockLost},
	} {
		_, end := e.Unlock(context.Background(), redlock.UnlockStart{Key: "one"})
		end(d)
	}
	for _, want := range []string{"releasing one failed (1 of 1 node failed)", "(0 of 1 node released it, 1 needed)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the release's line with one node: want %q, got:\n%s", want, stderr.String())
		}
	}
}
