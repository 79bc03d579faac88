package main

import (
	"strings"
	"testing"
)

// run --key "" (a variable that was empty, say) is an empty key, a usage
// error, as an empty positional KEY is: run took it for no --key, so the
// first word of CMD became the key and the rest CMD ("--key '' -- echo hi"
// locked "echo" and ran "hi", exit 127; "--key '' -- true" said "no
// command"; "--key '' -- echo echo" would lock "echo" and run echo).
func TestReviewEmptyKeyFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--nodes", "127.0.0.1:1", "--wait", "0", "--key", "", "--", "echo", "hi"},
		{"run", "--nodes", "127.0.0.1:1", "--wait", "0", "--key=", "--", "echo", "echo"},
		{"run", "--nodes", "127.0.0.1:1", "--key", "", "--", "true"},
	} {
		r := invoke(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--key is empty") {
			t.Errorf("redlock %q: want exit 2 and '--key is empty' on stderr, got %v", args, r)
		}
	}
}
