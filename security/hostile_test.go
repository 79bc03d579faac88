package security_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/fakeredis"
	"github.com/go-redlock/redlock/internal/respguard"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// helloReply is a Redis 7 server's answer to HELLO 3, for the fake servers
// of these tests.
const helloReply = "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n"

// hostileNode serves, on a loopback port, a server that completes the
// clients' handshakes (HELLO 3, AUTH, SELECT, CLIENT, PING) and answers every
// other command with reply: a broken or hostile server, or one behind a
// proxy that is. It returns the server's address.
func hostileNode(t *testing.T, reply string) string {
	t.Helper()
	return fakeredis.Serve(t, func(args []string) string {
		switch strings.ToUpper(args[0]) {
		case "HELLO":
			return helloReply
		case "AUTH", "SELECT", "CLIENT":
			return "+OK\r\n"
		case "PING":
			return "+PONG\r\n"
		}
		return reply
	})
}

// A node whose replies announce more than a process can hold (an array of
// four billion elements, a string of four billion bytes: thirteen bytes
// each) or nest deeper than any reply of Redis costs that node only, through
// every driver: the client does not allocate what was announced, its call
// fails on that node with respguard.ErrRefused, and a lock is still taken on
// the quorum of the others. Before the guard, each of these replies ended the
// test binary with "fatal error: runtime: out of memory", which no recover
// catches: one bad node of three killed every lock of the process. (The
// nesting crashed go-redis and redigo with a stack overflow, at a depth
// that would take a gigabyte of stack here: it is checked with a shallow
// reply, refused at respguard.MaxDepth.)
func TestHostileRepliesCostOneNode(t *testing.T) {
	good := redistest.NewServers(t, 2)
	for _, tc := range []struct{ name, reply string }{
		{"HugeArray", "*4000000000\r\n"},
		{"HugeString", "$4000000000\r\n"},
		{"HugeMap", "%4000000000\r\n"},
		{"HugeSet", "~4000000000\r\n"},
		{"HugePush", ">4000000000\r\n"},
		{"HugeBlobError", "!4000000000\r\n"},
		{"DeepArray", strings.Repeat("*1\r\n", 1000) + ":1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile := hostileNode(t, tc.reply)
			for _, d := range drivers {
				t.Run(d.name, func(t *testing.T) {
					ctx := t.Context()
					alone := openClient(t, d.name, []string{hostile}, redlock.WithNodeTimeout(time.Second))
					_, err := alone.TryLock(ctx, "hostile-"+d.name)
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					require.ErrorIs(t, err, respguard.ErrRefused)

					addrs := append([]string{hostile}, redistest.Addrs(good)...)
					c := openClient(t, d.name, addrs, redlock.WithNodeTimeout(time.Second))
					l, err := c.TryLock(ctx, "hostile-"+tc.name+"-"+d.name)
					require.NoError(t, err, "a lock on the two good nodes of three")
					require.NoError(t, l.Unlock(ctx))
				})
			}
		})
	}
}
