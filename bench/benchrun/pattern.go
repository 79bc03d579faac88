package benchrun

import (
	"fmt"
	"regexp"
)

// CheckPattern returns an error when go test would refuse s as a -bench
// pattern: go test splits it at each '|' and '/' outside brackets and
// parentheses (a '\' escaping the next byte) and compiles every part by
// itself, so that a pattern may compile whole and still be refused ("[]/]":
// "[]" alone does not compile). The commands check their -bench with it
// before building the suite.
func CheckPattern(s string) error {
	for _, part := range patternParts(s) {
		if _, err := regexp.Compile(part); err != nil {
			return fmt.Errorf("part %q: %w", part, err)
		}
	}
	return nil
}

// patternParts splits s as the testing package does (splitRegexp in
// testing/match.go): at the '/' and '|' outside brackets and parentheses.
func patternParts(s string) []string {
	var parts []string
	brackets, parens := 0, 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0) // an unmatched ']' is legal
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets == 0 && parens == 0 {
				parts = append(parts, s[:i])
				s, i = s[i+1:], 0
				continue
			}
		}
		i++
	}
	return append(parts, s)
}
