package plural

import "testing"

func TestNodes(t *testing.T) {
	for n, want := range map[int]string{0: "nodes", 1: "node", 2: "nodes", 5: "nodes", -1: "nodes"} {
		if got := Nodes(n); got != want {
			t.Errorf("Nodes(%d) = %q, want %q", n, got, want)
		}
	}
}
