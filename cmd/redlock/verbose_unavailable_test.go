//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestVerboseUnavailableTellsEachNodeOnce kills two nodes of three: run -v
// --wait 1s told each failed node on its line (nodeFailed), then the
// waiting warning listed each node's error again. The warning now leaves
// out the errors told already, keeping the votes; without -v it still
// names every node. Through every driver. The command's error at the end
// of --wait, its verdict, names every failed node with its error again,
// with or without -v, and no "(see above)": it is the one part of the
// output that a tail of it (systemctl status, a Kubernetes termination
// message from the log's last lines, cron's mail subject) is sure to hold,
// however long the wait told -v lines before it, and its errors are the
// last attempt's, which can differ from those told at a node's first
// failure.
func TestVerboseUnavailableTellsEachNodeOnce(t *testing.T) {
	t.Parallel()
	servers, nodeList := nodes(t, 3)
	var down []string
	for _, s := range servers[1:] {
		down = append(down, s.Addr())
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			for _, verbose := range []bool{true, false} {
				args := []string{"run", "--driver", d, "--wait", "1s", "--nodes", nodeList, "unavail-" + d, "--", "true"}
				if verbose {
					args = append([]string{"run", "-v"}, args[1:]...)
				}
				r := invoke(t, "", args...)
				if r.code != exitUnavailable {
					t.Fatalf("run (-v %v) with two nodes of three down: want exit %d:\n%v", verbose, exitUnavailable, r)
				}
				// What came before the command's verdict.
				before, _, ok := strings.Cut(r.stderr, "redlock: run: ")
				if !ok || !strings.Contains(before, "redlock: waiting for unavail-"+d+" (2 of 3 nodes failed, 2 needed: no quorum possible):\n") {
					t.Fatalf("run (-v %v): no waiting warning before the verdict:\n%v", verbose, r)
				}
				_, verdict, _ := strings.Cut(r.stderr, "redlock: run: lock \"unavail-"+d+"\" not obtained within 1s: too many nodes failed for a quorum:\n")
				for _, addr := range down {
					if n := strings.Count(before, "node "+addr+":") + strings.Count(before, "node "+addr+" failed to acquire"); n != 1 {
						t.Errorf("run (-v %v): node %s's error told %d times before the verdict, want once:\n%v", verbose, addr, n, r)
					}
					if n := strings.Count(verdict, "\nredlock: node "+addr+": "+d+": "); n != 1 {
						t.Errorf("run (-v %v): the verdict names node %s with its error %d times, want once:\n%v", verbose, addr, n, r)
					}
				}
				if strings.Contains(r.stderr, "see above") {
					t.Errorf("run (-v %v): the verdict sends the reader above it:\n%v", verbose, r)
				}
			}
		})
	}
}
