//go:build unix

package main

import (
	"strings"
	"testing"
)

// "no nodes" says where the empty list came from: a --nodes given empty on
// the command line wins over a REDLOCK_NODES that names nodes, and a
// REDLOCK_NODES of commas and spaces names none; neither is told to "set
// REDLOCK_NODES", which is set. Nothing is dialled: the list is refused
// first.
func TestNoNodesSaysWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"empty --nodes over the variable", []string{"REDLOCK_NODES=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, []string{"status", "--nodes", "", "k"}, `status: no nodes: --nodes is empty, and a flag on the command line wins over REDLOCK_NODES`},
		{"empty --nodes over the variable, run", []string{"REDLOCK_NODES=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, []string{"run", "--nodes", "", "k", "--", "true"}, `run: no nodes: --nodes is empty, and a flag on the command line wins over REDLOCK_NODES`},
		{"commas in --nodes", nil, []string{"hold", "--nodes", " , ", "k"}, `hold: no nodes: --nodes " , " names none`},
		{"commas in the variable", []string{"REDLOCK_NODES= , "}, []string{"doctor"}, `doctor: no nodes: REDLOCK_NODES=" , " names none`},
		{"neither", nil, []string{"status", "k"}, "status: no nodes: give --nodes host:port,... or set REDLOCK_NODES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invokeEnv(t, tc.env, "", tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("want exit %d and %q, got %v", exitUsage, tc.says, r)
			}
		})
	}
}
