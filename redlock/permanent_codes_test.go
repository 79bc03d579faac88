package redlock_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A VoteError whose nodes answered different errors that retrying cannot fix
// names each code once ("2 answered WRONGPASS or NOAUTH"), not the first
// node's code as every node's ("2 answered WRONGPASS"): a redlock run with
// one node of a wrong password and one of none said so.
func TestVoteErrorNamesEveryPermanentCode(t *testing.T) {
	for _, replies := range [][]string{ // of the failing nodes; a good node follows them
		{"WRONGPASS invalid username-password pair", "NOAUTH Authentication required."},
		{"NOPERM no permissions", "WRONGPASS invalid", "WRONGPASS invalid", "NOAUTH Authentication required."},
		{"NOPERM no permissions", "NOPERM no permissions"},
	} {
		nodes := []driver.Node{}
		for _, reply := range replies {
			nodes = append(nodes, &failing{Node: memory.New(), err: errors.New(reply)})
		}
		nodes = append(nodes, memory.New())
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)))
		// No deadline: only the fail-fast rule ends Lock.
		_, err := c.Lock(t.Context(), "k")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		// The codes of the nodes counted: the round may have decided
		// before every node answered.
		var codes []string
		var walk func(error)
		walk = func(e error) {
			if ne, ok := e.(*redlock.NodeError); ok {
				if code, _, _ := strings.Cut(ne.Err.Error(), " "); !slices.Contains(codes, code) {
					codes = append(codes, code)
				}
			}
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
			}
		}
		walk(err)
		require.NotEmpty(t, codes, "%v", err)
		text := v.Error()
		_, named, ok := strings.Cut(text, "; ")
		require.True(t, ok, "the votes name no code: %q", text)
		for _, code := range codes {
			assert.Equal(t, 1, strings.Count(named, code), "%s named once in %q", code, text)
		}
		if len(codes) > 1 {
			assert.Contains(t, named, " or ", "%q", text)
		}
	}
}
