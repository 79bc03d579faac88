package benchrun

import "testing"

// CheckPattern refuses what go test -bench refuses: a pattern any part of
// which, as go test splits it at the '/' and '|' outside brackets and
// parentheses, does not compile, though the whole may ("[]/]": "[]" alone
// does not).
func TestCheckPattern(t *testing.T) {
	for _, s := range []string{"", ".", "^BenchmarkLock$/^rueidis$/^nodes=1$", "[/]", "(a/b)", "a|b/c", `a\/b`, "Lock/nodes=(1|5)"} {
		if err := CheckPattern(s); err != nil {
			t.Errorf("CheckPattern(%q) = %v; want nil", s, err)
		}
	}
	for _, s := range []string{"[", "Lock/(nodes=5", "[]/]", `\Q/\E`, "a|[", "a|b/[", "(a"} {
		if err := CheckPattern(s); err == nil {
			t.Errorf("CheckPattern(%q) = nil; want an error", s)
		}
	}
}
