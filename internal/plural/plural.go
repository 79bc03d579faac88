// Package plural gives the nouns that the library's and the command's
// messages count, in the number their count asks for, and the lists they
// name, from one place.
package plural

import "strings"

// Nodes is "node" for one node, "nodes" for any other number.
func Nodes(n int) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}

// Or lists words as alternatives: "A", "A or B", "A, B or C"; "" for none.
func Or(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
