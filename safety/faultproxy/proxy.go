// Package faultproxy is a TCP proxy on 127.0.0.1 in front of a redis-server
// for network faults in the safety scenarios, the soak and chaos.
//
// A [Proxy] ([NewProxy], [NewProxies]) is a TCP proxy on 127.0.0.1 in front
// of a server for network faults: latency ([Proxy.SetLatency]), cut
// connections ([Proxy.Cut]), a blackhole that accepts and never answers
// ([Proxy.Blackhole]) and lost replies, where requests are applied and
// their replies swallowed ([Proxy.LoseReplies]); [Proxy.Heal] ends them.
//
// It is Shopify's toxiproxy (github.com/Shopify/toxiproxy/v2), a well-kept
// fault-injection proxy, used in process through its library API rather
// than a home-made proxy. Every fault is one small custom toxic registered
// through toxiproxy's own extension API, one on each stream, installed before
// the proxy starts and never removed: a fault call changes the proxy's state,
// never toxiproxy's chain of toxics, because toxiproxy v2.5.0 can wait for
// ever changing the chain while a connection is closing (fault.go says how).
// The toxic drops data and closes on Heal only the connections that lost
// data. A TCP stream cannot lose bytes and carry on, so such a connection
// must not be reused (a pipelining client would pair later replies with the
// wrong commands), while an idle pooled connection that lost nothing carries
// on, as it would on a real network. The proxy never gives up its port
// before Close, even while cut, so that no other server of the test binary
// can take it.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/rs/zerolog"

	"github.com/go-redlock/redlock/redistest"
)

var (
	apiOnce sync.Once
	api     *toxiproxy.ApiServer // never listens: only the proxies' owner
	proxies atomic.Int64         // proxies started, to name them
)

// Proxy is a TCP proxy on 127.0.0.1 in front of one server, through which
// tests inject network faults: latency, cut connections, a blackhole (accept,
// never answer) and lost replies (requests forwarded, replies swallowed).
// Clients connect to [Proxy.Addr] instead of the server's address. Faults last
// until [Proxy.Heal]; several can be active at once. Its methods are safe for
// concurrent use, and none waits on a connection.
type Proxy struct {
	upstream string
	p        *toxiproxy.Proxy
	addr     string
	f        *faults
}

// StartProxy starts a proxy on a free port of 127.0.0.1 that forwards to
// upstream, which must be a loopback address ("127.0.0.1:PORT", "[::1]:PORT"
// or "localhost:PORT"). The upstream need not be up: a client that connects
// while it is down is disconnected at once. Tests use [NewProxy], which also
// closes the proxy.
func StartProxy(upstream string) (*Proxy, error) {
	if err := checkLoopback(upstream); err != nil {
		return nil, err
	}
	apiOnce.Do(func() {
		api = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	name := "redistest-" + strconv.FormatInt(proxies.Add(1), 10)
	p := toxiproxy.NewProxy(api, name, "127.0.0.1:0", upstream)
	f := newFaults()
	for _, s := range []string{"upstream", "downstream"} {
		body, err := json.Marshal(map[string]any{"name": "faults_" + s, "type": faultToxicType, "stream": s, "toxicity": 1.0})
		if err != nil {
			return nil, fmt.Errorf("faultproxy: proxy to %s: %w", upstream, err)
		}
		w, err := p.Toxics.AddToxicJson(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("faultproxy: proxy to %s: add the %s toxic: %w", upstream, s, err)
		}
		t, ok := w.Toxic.(*faultToxic)
		if !ok {
			return nil, fmt.Errorf("faultproxy: proxy to %s: the %s toxic is a %T", upstream, s, w.Toxic)
		}
		t.f, t.dir = f, w.Direction
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faultproxy: start proxy to %s: %w", upstream, err)
	}
	return &Proxy{upstream: upstream, p: p, addr: p.Listen, f: f}, nil
}

// checkLoopback returns an error unless addr is host:port on a loopback host.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("faultproxy: proxy upstream %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("faultproxy: proxy upstream %q is not a loopback address", addr)
}

// NewProxy starts a proxy in front of upstream for a test, with [StartProxy],
// and closes it when the test ends. A failure to start fails the test.
func NewProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	p, err := StartProxy(upstream)
	if err != nil {
		tb.Fatal(err)
		return nil
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Error(err)
		}
	})
	return p
}

// NewProxies starts one proxy in front of each server, in order, as
// [NewProxy] does.
func NewProxies(tb testing.TB, servers []*redistest.Server) []*Proxy {
	tb.Helper()
	ps := make([]*Proxy, len(servers))
	for i, s := range servers {
		ps[i] = NewProxy(tb, s.Addr())
	}
	return ps
}

// Addr returns the address clients connect to, "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// String returns "proxy ADDR -> UPSTREAM".
func (p *Proxy) String() string { return "proxy " + p.addr + " -> " + p.upstream }

// SetLatency delays every chunk of data on its way to the server by toServer
// and on its way back to the client by toClient, counted from the chunk's
// arrival at the proxy, on current and new connections. A zero duration
// removes that direction's delay. Data already held back is delivered in
// order, when its arrival plus the new delay has passed (at once for zero).
func (p *Proxy) SetLatency(toServer, toClient time.Duration) error {
	if toServer < 0 || toClient < 0 {
		return fmt.Errorf("faultproxy: %s: negative latency %v, %v", p, toServer, toClient)
	}
	return p.change("set latency", func(f *faults) {
		f.latency[stream.Upstream], f.latency[stream.Downstream] = toServer, toClient
	})
}

// Cut closes every connection through the proxy, dropping any data in
// flight, and keeps closing new ones as they start, before they forward
// anything, until [Proxy.Heal]: to a client the server is unreachable, and
// it learns so at once (end of file or reset), not by a timeout. Cut
// followed at once by Heal resets every connection the proxy had started.
func (p *Proxy) Cut() error {
	return p.change("cut", func(f *faults) { f.cut, f.cuts = true, f.cuts+1 })
}

// Blackhole makes the proxy accept connections and never answer, until
// [Proxy.Heal]: requests are dropped before they reach the server, and
// replies already on their way (held back by latency, say) are dropped too.
// A client learns of it only by its own timeout.
func (p *Proxy) Blackhole() error {
	return p.change("blackhole", func(f *faults) { f.blackhole = true })
}

// LoseReplies forwards every request to the server, which applies it, and
// drops every reply, until [Proxy.Heal]: the client sees a timeout for a
// command that took effect.
func (p *Proxy) LoseReplies() error {
	return p.change("lose replies", func(f *faults) { f.lose = true })
}

// Heal removes every fault. Connections that had data dropped (by Cut,
// Blackhole or LoseReplies) are closed, as TCP would end a stream that lost
// bytes, and clients reconnect; the others carry on. Data held back by
// latency is delivered at once, in order. Healing a healthy proxy does
// nothing.
func (p *Proxy) Heal() error {
	return p.change("heal", func(f *faults) {
		f.latency = [len(f.latency)]time.Duration{}
		f.blackhole, f.lose, f.cut = false, false, false
	})
}

// change applies set to the proxy's faults, or says the proxy is closed.
func (p *Proxy) change(op string, set func(*faults)) error {
	if !p.f.change(set) {
		return fmt.Errorf("faultproxy: %s: %s: proxy is closed", op, p)
	}
	return nil
}

// Dropped returns how many bytes the proxy's faults (Cut, Blackhole and
// LoseReplies) have dropped since it started, in both directions, counting
// data that reached a connection the proxy was closing. A test that must
// know a reply was really lost, not merely still on its way to the proxy
// when the server counted the command, waits for it to grow.
func (p *Proxy) Dropped() int64 { return p.f.dropped.Load() }

// Faults returns the names of the active faults ("blackhole", "cut",
// "latency", "lose replies"), sorted, or none when the proxy is healthy.
func (p *Proxy) Faults() []string { return p.f.names() }

// Close stops the proxy: it closes the listener and every connection. It is
// idempotent.
func (p *Proxy) Close() error {
	if p.f.close() {
		p.p.Stop()
	}
	return nil
}
