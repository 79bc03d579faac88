package rueidis

import (
	"context"
	"errors"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/rueidiscore"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("rueidis", Driver{}) }

// Driver opens rueidis nodes by address. It is registered as "rueidis".
type Driver struct{}

var (
	_ driver.Driver       = Driver{}
	_ driver.ConfigOpener = Driver{}
)

// Open returns a node for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS, whose query parameters tls_ca_file, tls_cert_file, tls_key_file and
// tls_server_name set the CAs to trust (default: the system's), a client
// certificate and its key, and the name to verify the server's certificate
// against (default: the host); or a Redis Cluster,
// "redis[s]://[user:password@]host:port?cluster=true&addr=host2:port2" (the
// URL's host and every addr are seeds), for which the node opens a cluster
// client (see the package documentation). It does not connect: the node
// creates its rueidis client on first use, and again on the next use after
// an attempt failed. Open fails only for a malformed address or TLS files it
// cannot load, and its error never contains the password. The node owns its client and
// closes it on Close.
func (Driver) Open(addr string) (driver.Node, error) { return rueidiscore.Open(library, addr, nil) }

// OpenConfig is Open with a driver.Config: with cfg.TLS set, the node
// connects with TLS whatever the address's scheme, with a copy of cfg.TLS on
// which a rediss:// address's tls_* parameters are applied. redlock.Open calls
// it for redlock.WithTLSConfig.
func (Driver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	return rueidiscore.Open(library, addr, cfg.TLS)
}

// New returns a node over c, a client the caller configured, for one
// independent Redis master, or for a whole Redis Cluster when c is a cluster
// client. The caller keeps ownership: Close on the node does
// not close c, but calls on the node after Close fail. The node is
// named (in errors, logs and the redlock.node attribute of metrics) by what c
// connects to, without credentials: its address, or, when c has several
// servers, theirs (c.Nodes(), when New is called), sorted, as
// "cluster(host:port,...)" for a cluster client (at most 8 listed, then
// "+N"). Nodes over clients of the same servers thus have one name, which
// redlock.New refuses as one node given twice, and a program that keeps
// making nodes over fresh clients adds no metric series.
//
// Configure c with DisableRetry, so that a command whose reply was lost is
// reported as an error rather than retried, and prefer DisableCache and, for
// one server, ForceSingleClient (a client of a Redis Cluster must leave it
// off: with it, c talks to its first address alone, which answers MOVED for
// the other shards' keys). If c is nil, every call on the node, and Close,
// return an error.
//
// Once the caller closes c, the node's calls fail with an error matching
// driver.ErrClosed. A call that fails with rueidis.ErrClosing, which c also
// returns for a command cut short by a connection it closes while it stays
// open (a cluster client's, to a node gone from its slot map), costs a PING
// that asks c whether it is closed.
//
// A call returns by the end of its context even when c holds it longer: c
// makes one connection to a server at a time, and the commands that need it
// wait for it whatever their contexts, up to c's dial timeout (5s by
// default), when it is made for a call or a cluster refresh of a longer
// context to a server that does not answer. Such a command goes on in the
// background, on a goroutine of the node's, until c returns it (bounded by
// c's timeouts: c's Close does not end its wait for a connection being made,
// which goes on up to the dial timeout), and its outcome is unknown, as that
// of any call whose context ended in flight.
func New(c rueidis.Client) driver.Node { return rueidiscore.New(library, c) }

// library is rueidis as package rueidiscore, which holds this driver's logic,
// uses it.
var library = &rueidiscore.Library[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua]{
	Name: "rueidis",
	NewClient: func(o rueidiscore.Options) (rueidis.Client, error) {
		return rueidis.NewClient(rueidis.ClientOption{
			InitAddress: o.InitAddress, Username: o.Username, Password: o.Password, SelectDB: o.SelectDB,
			Dialer: o.Dialer, TLSConfig: o.TLSConfig, DialCtxFn: o.DialCtxFn, ConnWriteTimeout: o.ConnWriteTimeout,
			// The node's client always pipelines: a call returns as soon as
			// its context ends, and never waits behind another's reply. A
			// lane's client does not: a lone call is read on the caller's
			// goroutine (see rueidiscore.Options).
			ForceSingleClient: !o.Cluster, DisableCache: true, DisableRetry: true, AlwaysPipelining: !o.Lane, PipelineMultiplex: -1,
		})
	},
	Cluster: func(c rueidis.Client) bool { return c.Mode() == rueidis.ClientModeCluster },
	Set: func(ctx context.Context, c rueidis.Client, key, value string, ms int64) rueidis.RedisResult {
		return c.Do(ctx, c.B().Set().Key(key).Value(value).Nx().PxMilliseconds(ms).Build())
	},
	Do: func(ctx context.Context, c rueidis.Client, args ...string) rueidis.RedisResult {
		return c.Do(ctx, c.B().Arbitrary(args...).Build())
	},
	Send: func(ctx context.Context, c rueidis.Client, w rueidiscore.Words) rueidis.RedisResult {
		return c.Do(ctx, c.B().Arbitrary(w.Slice()...).Build())
	},
	IsNoScript: func(err error) bool {
		re, ok := rueidis.IsRedisErr(err)
		return ok && re.IsNoScript()
	},
	NewScript: func(src string) *rueidis.Lua { return rueidis.NewLuaScript(src) },
	Exec: func(ctx context.Context, c rueidis.Client, s *rueidis.Lua, keys rueidiscore.Keys, args rueidiscore.Args) rueidis.RedisResult {
		return s.Exec(ctx, c, keys.Slice(), args.Slice())
	},
	IsNil: rueidis.IsRedisNil,
	IsReply: func(err error) bool {
		var re *rueidis.RedisError
		return errors.As(err, &re)
	},
	ErrClosing: rueidis.ErrClosing,
	SetHooks: func(d rueidis.DedicatedClient, h rueidiscore.Hooks) <-chan error {
		return d.SetPubSubHooks(rueidis.PubSubHooks{
			OnMessage:      func(m rueidis.PubSubMessage) { h.OnMessage(m.Channel) },
			OnSubscription: func(s rueidis.PubSubSubscription) { h.OnSubscription(s.Kind, s.Channel) },
		})
	},
	Subscribe: func(ctx context.Context, d rueidis.DedicatedClient, channels ...string) error {
		return d.Do(ctx, d.B().Ssubscribe().Channel(channels...).Build()).Error()
	},
	Unsubscribe: func(ctx context.Context, d rueidis.DedicatedClient, channels ...string) error {
		return d.Do(ctx, d.B().Sunsubscribe().Channel(channels...).Build()).Error()
	},
}
