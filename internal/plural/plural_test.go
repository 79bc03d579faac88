package plural

import "testing"

func TestNodes(t *testing.T) {
	for n, want := range map[int]string{0: "nodes", 1: "node", 2: "nodes", 5: "nodes", -1: "nodes"} {
		if got := Nodes(n); got != want {
			t.Errorf("Nodes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestOr(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"NOPERM"}, "NOPERM"},
		{[]string{"WRONGPASS", "NOAUTH"}, "WRONGPASS or NOAUTH"},
		{[]string{"NOPERM", "WRONGPASS", "NOAUTH"}, "NOPERM, WRONGPASS or NOAUTH"},
	} {
		if got := Or(tc.words); got != tc.want {
			t.Errorf("Or(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
