// Package plural gives the nouns that the library's and the command's
// messages count, in the number their count asks for, from one place.
package plural

// Nodes is "node" for one node, "nodes" for any other number.
func Nodes(n int) string {
	if n == 1 {
		return "node"
	}
	return "nodes"
}
