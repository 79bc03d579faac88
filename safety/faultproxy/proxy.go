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
// than a home-made proxy: latency is its latency toxic, and the other faults
// are one small custom toxic registered through toxiproxy's own extension
// API, which drops data and, unlike toxiproxy's "timeout" toxic, closes on
// Heal only the connections that lost data. A TCP stream cannot lose bytes
// and carry on, so such a connection must not be reused (a pipelining client
// would pair later replies with the wrong commands), while an idle pooled
// connection that lost nothing carries on, as it would on a real network.
// The proxy never gives up its port before Close, even while cut, so that
// no other server of the test binary can take it.
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/go-redlock/redlock/redistest"
)

// Each fault is a toxiproxy "toxic" on the proxy's links (see the package
// documentation for why toxiproxy, and why a custom toxic):
//
//	SetLatency   toxiproxy's latency toxic, upstream (to the server) and/or
//	             downstream (back to the client)
//	Cut          the drop toxic on both streams, closing each link within a
//	             millisecond: every connection is closed at once
//	Blackhole    the drop toxic on both streams: data is dropped in both
//	             directions, connections stay open
//	LoseReplies  the drop toxic on the downstream only: requests reach the
//	             server and are applied, their replies are dropped

// Toxic names; at most one of each on a proxy.
const (
	toxicLatencyUp     = "latency_up"
	toxicLatencyDown   = "latency_down"
	toxicCutUp         = "cut_up"
	toxicCutDown       = "cut_down"
	toxicBlackholeUp   = "blackhole_up"
	toxicBlackholeDown = "blackhole_down"
	toxicLoseReplies   = "lose_replies"
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
// concurrent use.
type Proxy struct {
	upstream string
	p        *toxiproxy.Proxy
	addr     string

	mu      sync.Mutex
	active  map[string]bool       // toxic names present
	drops   map[string]*dropToxic // the drop toxics present, by name
	dropped int64                 // bytes dropped by drop toxics since removed
	closed  bool
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
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faultproxy: start proxy to %s: %w", upstream, err)
	}
	return &Proxy{upstream: upstream, p: p, addr: p.Listen, active: make(map[string]bool), drops: make(map[string]*dropToxic)}, nil
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
// and on its way back to the client by toClient, on current and new
// connections, in whole milliseconds (rounded up). A zero duration removes
// that direction's delay; data already delayed is delivered in order.
func (p *Proxy) SetLatency(toServer, toClient time.Duration) error {
	if toServer < 0 || toClient < 0 {
		return fmt.Errorf("faultproxy: %s: negative latency %v, %v", p, toServer, toClient)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usableLocked("set latency"); err != nil {
		return err
	}
	for _, d := range []struct {
		name, stream string
		delay        time.Duration
	}{{toxicLatencyUp, "upstream", toServer}, {toxicLatencyDown, "downstream", toClient}} {
		if err := p.removeLocked(d.name); err != nil {
			return err
		}
		if d.delay > 0 {
			ms := (d.delay + time.Millisecond - 1) / time.Millisecond
			if err := p.addLocked(toxic{d.name, "latency", d.stream, map[string]any{"latency": int64(ms)}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cut closes every connection through the proxy, dropping any data in
// flight, and keeps closing new ones within a millisecond of their start,
// before they forward anything, until [Proxy.Heal]: to a client the server is
// unreachable, and it learns so at once (end of file or reset), not by a
// timeout. Cut followed at once by Heal resets every connection.
func (p *Proxy) Cut() error {
	return p.add("cut",
		toxic{toxicCutUp, dropToxicType, "upstream", map[string]any{"close_after": 1}},
		toxic{toxicCutDown, dropToxicType, "downstream", map[string]any{"close_after": 1}})
}

// Blackhole makes the proxy accept connections and never answer, until
// [Proxy.Heal]: requests are dropped before they reach the server, and
// replies already on their way are dropped too. A client learns of it only
// by its own timeout.
func (p *Proxy) Blackhole() error {
	return p.add("blackhole",
		toxic{toxicBlackholeUp, dropToxicType, "upstream", nil},
		toxic{toxicBlackholeDown, dropToxicType, "downstream", nil})
}

// LoseReplies forwards every request to the server, which applies it, and
// drops every reply, until [Proxy.Heal]: the client sees a timeout for a
// command that took effect.
func (p *Proxy) LoseReplies() error {
	return p.add("lose replies",
		toxic{toxicLoseReplies, dropToxicType, "downstream", nil})
}

// toxic is one toxiproxy toxic with a toxicity of 1 (every connection).
type toxic struct {
	name, typ, stream string
	attrs             map[string]any
}

// add adds toxics; one already present is left as it is.
func (p *Proxy) add(op string, toxics ...toxic) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usableLocked(op); err != nil {
		return err
	}
	for _, t := range toxics {
		if !p.active[t.name] {
			if err := p.addLocked(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal removes every fault. Connections that had data dropped (by Cut,
// Blackhole or LoseReplies) are closed, as TCP would end a stream that lost
// bytes, and clients reconnect; the others carry on. Delayed data is
// delivered, in order. Healing a healthy proxy does nothing.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usableLocked("heal"); err != nil {
		return err
	}
	if len(p.active) == 0 {
		return nil
	}
	p.p.Toxics.ResetToxics(context.Background())
	clear(p.active)
	p.forgetDropsLocked()
	return nil
}

// Dropped returns how many bytes the proxy's faults (Cut, Blackhole and
// LoseReplies) have dropped since it started, in both directions. A test
// that must know a reply was really lost, not merely still on its way to
// the proxy when the server counted the command, waits for it to grow.
func (p *Proxy) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.dropped
	for _, d := range p.drops {
		n += d.dropped.Load()
	}
	return n
}

// forgetDropsLocked adds the bytes the present drop toxics dropped to
// p.dropped and forgets them: they have just been removed.
func (p *Proxy) forgetDropsLocked() {
	for name, d := range p.drops {
		p.dropped += d.dropped.Load()
		delete(p.drops, name)
	}
}

// Faults returns the names of the active faults ("cut", "blackhole",
// "lose replies", "latency"), sorted, or none when the proxy is healthy.
func (p *Proxy) Faults() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range []struct {
		fault  string
		toxics []string
	}{
		{"blackhole", []string{toxicBlackholeUp}},
		{"cut", []string{toxicCutUp}},
		{"latency", []string{toxicLatencyUp, toxicLatencyDown}},
		{"lose replies", []string{toxicLoseReplies}},
	} {
		for _, name := range f.toxics {
			if p.active[name] {
				out = append(out, f.fault)
				break
			}
		}
	}
	return out
}

// Close stops the proxy: it closes the listener and every connection. It is
// idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.p.Stop()
	return nil
}

func (p *Proxy) usableLocked(op string) error {
	if p.closed {
		return fmt.Errorf("faultproxy: %s: %s: proxy is closed", op, p)
	}
	return nil
}

// addLocked adds one toxic.
func (p *Proxy) addLocked(t toxic) error {
	body, err := json.Marshal(map[string]any{
		"name": t.name, "type": t.typ, "stream": t.stream, "toxicity": 1.0, "attributes": t.attrs,
	})
	if err != nil {
		return fmt.Errorf("faultproxy: %s: add %s: %w", p, t.name, err)
	}
	w, err := p.p.Toxics.AddToxicJson(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("faultproxy: %s: add %s: %w", p, t.name, err)
	}
	if d, ok := w.Toxic.(*dropToxic); ok {
		p.drops[t.name] = d
	}
	p.active[t.name] = true
	return nil
}

// removeLocked removes one toxic if it is present.
func (p *Proxy) removeLocked(name string) error {
	if !p.active[name] {
		return nil
	}
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("faultproxy: %s: remove %s: %w", p, name, err)
	}
	delete(p.active, name)
	if d, ok := p.drops[name]; ok {
		p.dropped += d.dropped.Load()
		delete(p.drops, name)
	}
	return nil
}

// dropToxicType is the name the drop toxic is registered under.
const dropToxicType = "redistest_drop"

func init() { toxics.Register(dropToxicType, new(dropToxic)) }

// dropToxic drops every chunk of data that reaches it. With CloseAfter > 0
// it closes its link that many milliseconds after it starts on it. When it is
// removed, it closes the links it dropped data on and lets the others carry
// on.
type dropToxic struct {
	CloseAfter int64 `json:"close_after"`

	dropped atomic.Int64 // bytes dropped, on every link
}

// dropState is a link's state: whether the toxic dropped data on it.
type dropState struct{ dropped bool }

// NewState implements toxics.StatefulToxic: one state per link.
func (*dropToxic) NewState() any { return new(dropState) }

// Pipe implements toxics.Toxic.
func (t *dropToxic) Pipe(stub *toxics.ToxicStub) {
	state, _ := stub.State.(*dropState)
	var closeAt <-chan time.Time
	if t.CloseAfter > 0 {
		timer := time.NewTimer(time.Duration(t.CloseAfter) * time.Millisecond)
		defer timer.Stop()
		closeAt = timer.C
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case <-closeAt:
			stub.Close()
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			t.dropped.Add(int64(len(c.Data)))
			if state != nil {
				state.dropped = true
			}
		}
	}
}

// Cleanup implements toxics.CleanupToxic: toxiproxy calls it, once Pipe has
// returned, when the toxic is removed. Closing the stub closes the link.
func (t *dropToxic) Cleanup(stub *toxics.ToxicStub) {
	if state, ok := stub.State.(*dropState); !ok || state.dropped {
		stub.Close()
	}
}
