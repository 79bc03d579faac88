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
		{fmt.Errorf("goredis: SET NX: slot 1: %w", replyError("ERR This instance has cluster support disabled")), "ERR This instance has cluster support disabled"},
		{errors.Join(context.DeadlineExceeded, fmt.Errorf("goredis: SET NX: %w", fmt.Errorf("%w: 127.0.0.1:1 and 127.0.0.1:2 ...", driver.ErrSeedsOfTwoClusters))), "seeds of two clusters"},
		{errors.New("seeds of two clusters"), ""}, // the sentinel, not its words
		// Redis 7.0's refusals of what a script calls, as redigo and
		// go-redis give them (with ERR) and rueidis (without).
		{fmt.Errorf("goredis: extend: %w", replyError("ERR The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4.")), "NOPERM"},
		{fmt.Errorf("rueidis: extend: %w", replyError("The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4.")), "NOPERM"},
		{replyError("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: fa24ae18, on @user_script:1."), "NOPERM"},
		{replyError("ERR The user executing the script can't publish to the channel mentioned in the command script: 1b2c, on @user_script:6."), "NOPERM"},
		{errors.New("ERR The user executing the script"), ""},
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

// CommandRefused is true for a refusal of the one command (NOPERM, also as
// Redis 7.0 words it for a script's call; a command renamed away), and
// false for an error of every command (WRONGPASS, a database the server does
// not have), a transient error, and nil.
func TestCommandRefused(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("goredis: identity: %w", replyError("NOPERM User noinfo has no permissions to run the 'info' command")), true},
		{replyError("ERR The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4."), true},
		{replyError("ERR unknown command 'INFO', with args beginning with: 'server' "), true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), false},
		{replyError("ERR DB index is out of range"), false},
		{errors.New("i/o timeout"), false},
		{nil, false},
	} {
		if got := driver.CommandRefused(c.err); got != c.want {
			t.Errorf("CommandRefused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
