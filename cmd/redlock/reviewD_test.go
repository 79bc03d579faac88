//go:build unix

package main

import (
	"strings"
	"testing"
)

// A password with an '@' and then a ',' (unencoded): the ',' splits
// --nodes inside the password, and the first piece, a URL whose '@' is the
// password's, does not parse when what follows its '@' is no host:port
// ("p@hunter2/x" is a path, "p@hunter2:x" a port). Its message redacted up
// to that '@' and printed the rest of the password: `malformed redis address
// "redis://xxxxx@hunter2/x"`. The pieces are one address, as for a ',' in
// a password without '@' (TestNodesCommaInPassword): exit 2, the hint at
// %2C, and nothing of the password.
func TestNodesAtThenCommaInPassword(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{"p@hunter2/x,y", "p@hunter2:x,y", "p@hunter2?x,y", "p@hunter2#x,y", "p@hunter2%x,y", "p@hunter2:1/x,y"} {
		for _, cmd := range [][]string{
			{"run", "--wait", "0", "k", "--", "true"},
			{"hold", "--wait", "0", "--for", "1ms", "k"},
			{"status", "k"},
			{"doctor"},
		} {
			nodes := "127.0.0.1:2,redis://u:" + pw + "@127.0.0.1:1,127.0.0.1:3"
			args := append([]string{cmd[0], "--nodes", nodes}, cmd[1:]...)
			r := invoke(t, "", args...)
			if r.code != exitUsage || strings.Contains(r.stdout+r.stderr, "hunter2") || !strings.Contains(r.stderr, "%2C") {
				t.Errorf("redlock %s with the password %q: want exit 2, a hint at %%2C and no password, got %v", cmd[0], pw, r)
			}
		}
	}
}
