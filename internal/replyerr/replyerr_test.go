package replyerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/internal/replyerr"
)

func TestFind(t *testing.T) {
	reply := errors.New("CROSSSLOT Keys in request don't hash to the same slot")
	isCrossSlot := func(msg string) bool { return strings.HasPrefix(msg, "CROSSSLOT ") }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the reply", reply, true},
		{"wrapped", fmt.Errorf("goredis: SET NX fence: %w", reply), true},
		{"wrapped twice", fmt.Errorf("node: %w", fmt.Errorf("goredis: %w", reply)), true},
		{"joined, second", errors.Join(errors.New("first"), fmt.Errorf("x: %w", reply)), true},
		{"joined in a wrap", fmt.Errorf("y: %w", errors.Join(errors.New("first"), reply)), true},
		{"not wrapped (%v)", fmt.Errorf("goredis: %v", reply), false},
		{"another reply", errors.New("MOVED 1 127.0.0.1:1"), false},
	} {
		if got := replyerr.Find(tc.err, isCrossSlot); got != tc.want {
			t.Errorf("%s: Find(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
