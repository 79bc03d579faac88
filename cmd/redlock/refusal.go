package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/redlock"
)

// refusalWait bounds how long refusalOnConnect waits for the server to speak.
const refusalWait = 500 * time.Millisecond

// refusalOnConnect returns the error reply that the server at a sends unasked
// on a new connection before it closes it, as a server that refuses clients
// does ("ERR max number of clients reached"), or "" when it sends nothing
// within min(timeout, refusalWait), or something else. A client that writes
// its handshake first sees such a refusal only as a reset connection, a
// broken pipe or EOF: doctor and status ask, after a call failed so, to say
// why.
func refusalOnConnect(ctx context.Context, a redisaddr.Addr, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, refusalWait))
	defer cancel()
	d := &net.Dialer{}
	var (
		conn net.Conn
		err  error
	)
	if cfg, cerr := a.TLSConfig(nil); cerr != nil {
		return ""
	} else if cfg != nil {
		conn, err = tlsdial.Dial(ctx, d, "tcp", a.HostPort(), cfg)
	} else {
		conn, err = d.DialContext(ctx, "tcp", a.HostPort())
	}
	if err != nil {
		return ""
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetReadDeadline(dl)
	}
	line, ok := firstLine(conn)
	if !ok || len(line) < 2 || line[0] != '-' {
		return ""
	}
	s := string(line[1:])
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q // a byte that would not show as itself
	}
	return s
}

// plaintextAnswer returns what the server at a, a rediss:// address, answers
// to a PING in plaintext on a new connection, within min(timeout,
// refusalWait): a server that does not speak TLS on that port answers it
// (+PONG, or -NOAUTH, ...), where a TLS client's handshake gets no answer and
// fails only at its deadline ("context deadline exceeded", nothing more).
// It returns "" for an address without TLS, or a server that does not
// answer so.
func plaintextAnswer(ctx context.Context, a redisaddr.Addr, timeout time.Duration) string {
	if cfg, err := a.TLSConfig(nil); err != nil || cfg == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, min(timeout, refusalWait))
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", a.HostPort())
	if err != nil {
		return ""
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return ""
	}
	line, ok := firstLine(conn)
	if !ok || len(line) < 2 || (line[0] != '+' && line[0] != '-') {
		return ""
	}
	s := string(line)
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q // a byte that would not show as itself
	}
	return s
}

// notTLS is what run, hold, doctor and status say of a rediss:// node that answers
// in plaintext (see plaintextAnswer).
func notTLS(answer string) string {
	return "TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (" + answer + "): give it as redis://, or give its tls-port"
}

// authRefused reports whether err is a server's refusal of the client's
// credentials: WRONGPASS (a wrong user or password, a disabled user) or
// NOAUTH (a password required and none given), as driver.PermanentCode
// finds the reply in err's chain, where every driver and doctor's client
// keep it. A reply that only quotes another server's refusal ("ERR Target
// instance replied with error: NOAUTH ..." of MIGRATE) is not one. Doctor
// asks it of a server's PING (probeNode) and of a cluster's CLUSTER NODES
// (probeClusterNode) alike.
func authRefused(err error) bool {
	code := driver.PermanentCode(err)
	return code == "WRONGPASS" || code == "NOAUTH"
}

// tlsHints returns, for each rediss:// node among addrs whose call timed
// out in err (its *redlock.NodeError, at any depth of err's joins), a line
// that says the node answers in plaintext, when it does (see
// plaintextAnswer): the drivers say only "context deadline exceeded" of a
// TLS handshake that a server without TLS never answers. A node that is a
// Redis Cluster gets a line for each of its seeds that answers so. The
// probes run at once, each bounded by refusalWait: one after the other, a
// node that answers nothing (down, or dropping packets) added its whole wait
// for each.
func tlsHints(ctx context.Context, addrs []string, err error) []string {
	byName := map[string]redisaddr.Node{}
	for _, s := range addrs {
		if a, perr := redisaddr.ParseNode(s); perr == nil {
			if cfg, terr := a.TLSConfig(nil); terr == nil && cfg != nil {
				byName[a.String()] = a
			}
		}
	}
	if len(byName) == 0 {
		return nil
	}
	// The servers to probe: the timed-out rediss:// nodes in err's order,
	// a cluster's seeds in its address's order.
	type probe struct {
		node   redisaddr.Node
		server redisaddr.Addr
	}
	var probes []probe
	seen := map[string]bool{}
	var walk func(err error)
	walk = func(err error) {
		var ne *redlock.NodeError
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
			return
		}
		if !errors.As(err, &ne) || !connalive.Timeout(ne.Err) || seen[ne.Addr] {
			return
		}
		a, ok := byName[ne.Addr]
		if !ok {
			return
		}
		seen[ne.Addr] = true
		if !a.Cluster {
			probes = append(probes, probe{a, a.Addr})
			return
		}
		for _, seed := range a.Seeds {
			if sa, serr := seedAddr(a, seed); serr == nil {
				probes = append(probes, probe{a, sa})
			}
		}
	}
	walk(err)
	said := make([]string, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() { said[i] = plaintextAnswer(ctx, p.server, refusalWait) })
	}
	wg.Wait()
	var hints []string
	for i, p := range probes {
		switch {
		case said[i] == "":
		case p.node.Cluster:
			hints = append(hints, "redlock: node "+p.node.String()+": seed "+p.server.HostPort()+": "+notTLS(said[i]))
		default:
			hints = append(hints, "redlock: node "+p.node.String()+": "+notTLS(said[i]))
		}
	}
	return hints
}

// firstLine reads from conn up to the end of its first line (CRLF), at most
// 256 bytes, until conn's deadline: the line without its CRLF, and whether
// one came whole.
func firstLine(conn net.Conn) ([]byte, bool) {
	buf := make([]byte, 256)
	n := 0
	for n < len(buf) {
		m, err := conn.Read(buf[n:])
		n += m
		if bytes.Contains(buf[:n], []byte("\r\n")) || err != nil {
			break
		}
	}
	line, _, ok := bytes.Cut(buf[:n], []byte("\r\n"))
	return line, ok
}
