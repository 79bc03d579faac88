package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/driver"
)

// The shapes of the Redis clients' error replies: a string type (redigo's
// redis.Error, go-redis's proto.RedisError) and a pointer to a struct
// (rueidis's *RedisError, valkey-go's *ValkeyError, go-redis's
// *proto.ReadOnlyError), each wrapped by a driver with %w.
type stringReply string

func (e stringReply) Error() string { return string(e) }

type structReply struct{ msg string }

func (e *structReply) Error() string { return e.msg }

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("redigo: SET NX: %w", stringReply("READONLY You can't write against a read only replica.")), "READONLY"},
		{fmt.Errorf("rueidis: SET NX: %w", &structReply{"READONLY You can't write against a read only replica."}), "READONLY"},
		{fmt.Errorf("valkeygo: SET NX: %w", &structReply{"OOM command not allowed when used memory > 'maxmemory'."}), "OOM"},
		{fmt.Errorf("goredis: SET NX: slot 1984: %w", stringReply("CLUSTERDOWN The cluster is down")), "CLUSTERDOWN"},
		{fmt.Errorf("rueidis: SET NX: slot 1984, primary 127.0.0.1:7000: %w", &structReply{"TRYAGAIN Multiple keys request during rehashing of slot"}), "TRYAGAIN"},
		{fmt.Errorf("goredis: EVALSHA: %w", stringReply("CROSSSLOT Keys in request don't hash to the same slot")), "CROSSSLOT"},
		{fmt.Errorf("goredis: EVALSHA extend: %w", stringReply("ERR The user executing the script can't run this command or subcommand script: ...")), "NOPERM"},
		{fmt.Errorf("redigo: SET NX: %w", stringReply("NOPERM User locker has no permissions to run the 'set' command")), "NOPERM"},
		{fmt.Errorf("redigo: EVALSHA: %w", stringReply("ERR unknown command 'EVALSHA'")), "ERR unknown command"},
		{fmt.Errorf("redigo: SET NX: %w", stringReply("ERR something else")), "ERR"},
		{fmt.Errorf("x: %w", errors.Join(errors.New("first"), stringReply("LOADING Redis is loading the dataset in memory"))), "LOADING"},
		{fmt.Errorf("goredis: SET NX: %w", context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("goredis: SET NX: %w", context.Canceled), "canceled"},
		{fmt.Errorf("goredis: SET NX: %w", driver.ErrClosed), "closed"},
		{fmt.Errorf("goredis: SET NX: %w", stringReply("EOF is no Redis code")), "redlockotel.stringReply"},
		{errors.New("goredis: SET NX: something"), "_OTHER"},
	} {
		if got := errorType(tc.err); got != tc.want {
			t.Errorf("errorType(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
