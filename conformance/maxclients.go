package conformance

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// maxClientsSaid is what a Redis server at its maxclients limit writes to a
// new connection before it closes it.
const maxClientsSaid = "max number of clients reached"

// refusedMaxClients checks that a node whose server has reached its
// maxclients limit fails every call with an error that names the reason:
// over plain TCP the server's own reply, which the clients read as their
// handshake's and drop (go-redis then reports a broken pipe, rueidis and
// valkey-go an end of file); over TLS, where the server refuses the
// connection without a word, an error that names the limit as the likely
// cause. Once the server takes clients again, the node works.
func refusedMaxClients(t *testing.T, ctx context.Context, s *redisSuite) {
	for _, tc := range []struct {
		name string
		opts []redistest.Option
		addr func(*testing.T, *redistest.Server) Addr
		want string
	}{
		{"Plain", nil, hostAddr, maxClientsSaid},
		{"Password", []redistest.Option{redistest.WithPassword(password)}, fullAddr, maxClientsSaid},
		{"TLS", []redistest.Option{redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired), redistest.WithPassword(password)}, fullAddr, "maxclients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// maxclients 1, the least Redis takes: one connection of
			// the test's fills it.
			srv := redistest.NewServer(t, append([]redistest.Option{redistest.WithConfig("maxclients", "1")}, tc.opts...)...)
			holder := holdClientSlot(t, ctx, srv)
			n := s.open(t, tc.addr(t, srv))
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v := value()
			for call, err := range callsWith(cctx, n, key(t), v) {
				switch {
				case err == nil:
					t.Errorf("%s on a server at its maxclients limit: error = nil, want one", call)
				case !strings.Contains(err.Error(), tc.want):
					t.Errorf("%s on a server at its maxclients limit: error = %v, want one that says %q: a server that refuses a connection with an error reply (\"-ERR max number of clients reached\") must be named in the error, not only the broken pipe or end of file the client met next", call, err, tc.want)
				}
				if err != nil {
					hidesPassword(t, "the error", err.Error(), v)
				}
			}
			// The server takes clients again: the node works.
			holder.Close()
			if !eventually(ctx, n, key(t), 10*time.Second) {
				t.Fatal("SetNX once the server takes clients again: still failing after 10s: a node must recover when its server does")
			}
		})
	}
}

// holdClientSlot connects to srv and waits for its reply to PING (NOAUTH
// from a server with a password will do), so that the server counts the
// connection as a client; it is closed at the end of the test.
func holdClientSlot(t *testing.T, ctx context.Context, srv *redistest.Server) net.Conn {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if c := srv.Certs(); c != nil {
		cfg, err := c.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.ServerName, _, _ = net.SplitHostPort(srv.Addr())
		conn = tls.Client(conn, cfg)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !(strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH")) {
		t.Fatalf("the connection that fills the server's one client slot: PING = %q, %v", line, err)
	}
	conn.SetDeadline(time.Time{})
	return conn
}
