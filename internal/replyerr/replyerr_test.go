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

func TestUnechoed(t *testing.T) {
	reply := errors.New("ERR unknown command 'SET', with args beginning with: 'k' 'VALUE' 'NX' 'PX' '10000' ")
	err := fmt.Errorf("goredis: SET NX: %w", fmt.Errorf("slot 1: %w", reply))
	got := replyerr.Unechoed(err)
	if want := "goredis: SET NX: slot 1: ERR unknown command 'SET'"; got.Error() != want {
		t.Errorf("Unechoed(%q) = %q, want %q", err, got, want)
	}
	for e := got; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), "VALUE") {
			t.Errorf("an error of the chain shows the arguments: %q", e)
		}
	}
	if !replyerr.Find(got, func(msg string) bool { return msg == "ERR unknown command 'SET'" }) {
		t.Errorf("Find does not see the reply, cut, in Unechoed's error")
	}
	if plain := fmt.Errorf("goredis: SET NX: %w", errors.New("NOPERM no permissions")); replyerr.Unechoed(plain) != plain {
		t.Errorf("Unechoed(%q) is not the error itself", plain)
	}
	if replyerr.Unechoed(nil) != nil {
		t.Error("Unechoed(nil) != nil")
	}
	if got := replyerr.CutEcho("ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'u' 'pw' "); got != "ERR unknown command 'HELLO'" {
		t.Errorf("CutEcho = %q", got)
	}
}
