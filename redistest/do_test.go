package redistest_test

import (
	"bufio"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

func TestDoReplyTypes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)

	v, err := s.Do(ctx, "GET", "missing")
	require.NoError(t, err)
	require.Nil(t, v)

	v, err = s.Do(ctx, "RPUSH", "list", "a", "", "c d\r\n")
	require.NoError(t, err)
	require.Equal(t, int64(3), v)

	v, err = s.Do(ctx, "LRANGE", "list", "0", "-1")
	require.NoError(t, err)
	require.Equal(t, []any{"a", "", "c d\r\n"}, v)

	v, err = s.Do(ctx, "LRANGE", "missing", "0", "-1")
	require.NoError(t, err)
	require.Equal(t, []any{}, v)

	v, err = s.Do(ctx, "EVAL", "return {1, 'two', redis.error_reply('MYERR three')}", "0")
	require.NoError(t, err)
	require.Equal(t, []any{int64(1), "two", redistest.RedisError("MYERR three")}, v)

	_, err = s.Do(ctx, "GET", "list")
	var rerr redistest.RedisError
	require.ErrorAs(t, err, &rerr)
	require.Contains(t, string(rerr), "WRONGTYPE")

	_, err = s.Do(ctx, "NO-SUCH-COMMAND")
	require.ErrorAs(t, err, &rerr)
	require.Contains(t, rerr.Error(), "ERR unknown command")

	_, err = s.Do(ctx)
	require.Error(t, err)
}

func TestPassword(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const pw = "s3cret pw:@/%"
	s := redistest.NewServer(t, redistest.WithPassword(pw))

	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	require.Equal(t, "redis", u.Scheme)
	require.Equal(t, s.Addr(), u.Host)
	got, ok := u.User.Password()
	require.True(t, ok)
	require.Equal(t, pw, got)

	// Do authenticates first.
	v, err := s.Do(ctx, "SET", "k", "v")
	require.NoError(t, err)
	require.Equal(t, "OK", v)
	v, err = s.Do(ctx, "CONFIG", "GET", "requirepass")
	require.NoError(t, err)
	require.Equal(t, []any{"requirepass", pw}, v)

	// A client that does not authenticate is refused.
	conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Write([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^-NOAUTH `, line)
}
