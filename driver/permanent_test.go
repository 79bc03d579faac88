package driver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/driver"
)

// replyError is an error reply as a client might type it.
type replyError string

func (e replyError) Error() string { return string(e) }

func TestPermanentCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), "WRONGPASS"},
		{replyError("NOAUTH Authentication required."), "NOAUTH"},
		{fmt.Errorf("goredis: SET NX: %w", replyError("NOPERM User u has no permissions to run the 'set' command")), "NOPERM"},
		{fmt.Errorf("rueidis: extend: %w", errors.New("WRONGTYPE Operation against a key holding the wrong kind of value script: 1b2c")), "WRONGTYPE"},
		{errors.Join(context.DeadlineExceeded, fmt.Errorf("x: %w", errors.New("OOM command not allowed when used memory > 'maxmemory'."))), "OOM"},
		{fmt.Errorf("%w: %w", context.Canceled, errors.New("READONLY You can't write against a read only replica.")), "READONLY"},
		{errors.New("ERR unknown subcommand 'X'. Try CLIENT HELP."), ""},
		{fmt.Errorf("goredis: extend: %w", replyError("ERR unknown command 'EVALSHA', with args beginning with: 'b100f71f' '1' 'k'")), "ERR unknown command"},
		{fmt.Errorf("rueidis: extend: %w", replyError("unknown command 'EVALSHA', with args beginning with: 'b100f71f' '1' 'k'")), "ERR unknown command"},
		{fmt.Errorf("redigo: dial: %w", replyError("ERR DB index is out of range")), "ERR DB index is out of range"},
		{replyError("ERR SELECT is not allowed in cluster mode"), "ERR SELECT is not allowed in cluster mode"},
		{fmt.Errorf("rueidis: connect: %w", replyError("DB index is out of range")), "ERR DB index is out of range"},
		{errors.New("ERR DB index is out"), ""},
		{errors.New("LOADING Redis is loading the dataset in memory"), ""},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), ""},
		{errors.New("a message that mentions WRONGPASS later"), ""},
		{errors.New("WRONGPASSWORD is not a code"), ""},
	} {
		if got := driver.PermanentCode(tc.err); got != tc.want {
			t.Errorf("PermanentCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
