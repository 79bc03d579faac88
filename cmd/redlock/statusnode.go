package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// maxRedirects bounds the MOVED redirections that status follows for one
// key of a cluster node.
const maxRedirects = 3

// keyReader reads what one node of status holds for lock keys: a server, or
// a Redis Cluster, whose keys it reads on the primary that serves their
// slot (a key's PTTL and its fencing counter, driver.FenceKey, are in one
// slot). It is used by one goroutine at a time.
type keyReader struct {
	node    redisaddr.Node
	timeout time.Duration
	clients map[string]*redis.Client // by host:port

	// What identify found: a server's run_id, and the node IDs of a
	// cluster (or of a cluster-enabled server), to refuse one server or one
	// cluster given twice.
	runID      string
	clusterIDs []string
	// A cluster's primaries that serve slots, or why they are unknown.
	primaries []clusterNodeInfo
	viewErr   error
	// stalled holds, by host:port, the servers that did not answer a
	// command within the timeout, with that command's error: status asks
	// them nothing more, so that a stalled server costs one timeout, not
	// one for each key.
	stalled map[string]error
	// refusals holds, by host:port, what a server that broke a connection
	// said unasked on a new one (refusalOnConnect), once asked.
	refusals map[string]string
	// notTLS holds, by host:port, what status says of a stalled server of
	// a rediss:// node that answers in plaintext (plaintextAnswer,
	// notTLS): its TLS handshake got no answer, a timeout and no more.
	notTLS map[string]string
}

// newKeyReader returns the reader of the node a. The connections are made on
// first use: it fails only for a local mistake (TLS files that do not load).
func newKeyReader(a redisaddr.Node, timeout time.Duration) (*keyReader, error) {
	r := &keyReader{node: a, timeout: timeout, clients: make(map[string]*redis.Client), stalled: make(map[string]error), refusals: make(map[string]string), notTLS: make(map[string]string)}
	if _, err := r.client(a.HostPort()); err != nil {
		return nil, err
	}
	return r, nil
}

// client returns the client of the node's server at hostPort.
func (r *keyReader) client(hostPort string) (*redis.Client, error) {
	if c := r.clients[hostPort]; c != nil {
		return c, nil
	}
	sa, err := seedAddr(r.node, hostPort)
	if err != nil {
		return nil, err
	}
	c, err := keystatus.NewClient(sa, r.timeout) // TLS for rediss://
	if err != nil {
		return nil, err
	}
	r.clients[hostPort] = c
	return c, nil
}

func (r *keyReader) close() {
	for _, c := range r.clients {
		c.Close()
	}
}

// identify learns which server the node is (INFO: run_id, and CLUSTER MYID
// for a cluster-enabled server), or for a cluster its node IDs and which
// primary serves which slots (CLUSTER NODES, from the first seed that
// answers).
func (r *keyReader) identify(ctx context.Context) {
	if r.node.Cluster {
		nodes, _, _, err := readClusterView(ctx, r.node, r.timeout)
		if err != nil {
			r.viewErr = fmt.Errorf("the cluster's slots are unknown: CLUSTER NODES failed: %w", err)
			return
		}
		for _, cn := range nodes {
			r.clusterIDs = append(r.clusterIDs, cn.id)
			if cn.primary && slotCount(cn.slots) > 0 {
				r.primaries = append(r.primaries, cn)
			}
		}
		return
	}
	c, _ := r.client(r.node.HostPort())
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	info, err := c.Info(cctx).Result()
	if err != nil {
		r.checkStalled(ctx, r.node.HostPort(), fmt.Errorf("INFO: %w", err))
		return
	}
	f := parseInfo(info)
	r.runID = f["run_id"]
	if f["cluster_enabled"] == "1" { // a shard's primary beside its cluster would count twice
		if id, err := c.Do(cctx, "CLUSTER", "MYID").Text(); err == nil {
			r.clusterIDs = []string{id}
		}
	}
}

// read reads key (as named on the node, with its prefix, prefix) and
// returns, for a cluster, the address of the primary that answered.
func (r *keyReader) read(ctx context.Context, prefix, key string) (keystatus.Key, string, error) {
	if !r.node.Cluster {
		if err := r.stalledErr(r.node.HostPort()); err != nil {
			return keystatus.Key{}, "", err
		}
		c, _ := r.client(r.node.HostPort())
		k, err := keystatus.Read(ctx, c, prefix, key)
		r.checkStalled(ctx, r.node.HostPort(), err)
		return k, "", r.explain(ctx, r.node.HostPort(), err)
	}
	if r.viewErr != nil {
		return keystatus.Key{}, "", r.viewErr
	}
	slot := driver.HashSlot(key)
	hostPort := ""
	for _, p := range r.primaries {
		if servesSlot(p.slots, slot) {
			hostPort = p.addr // the first: a MOVED corrects a map that is wrong
			break
		}
	}
	if hostPort == "" {
		return keystatus.Key{}, "", fmt.Errorf("no shard serves the key's slot %d", slot)
	}
	for redirects := 0; ; redirects++ {
		if err := r.stalledErr(hostPort); err != nil {
			return keystatus.Key{}, hostPort, fmt.Errorf("%s: %w", hostPort, err)
		}
		c, err := r.client(hostPort)
		if err != nil {
			return keystatus.Key{}, hostPort, err
		}
		k, err := keystatus.Read(ctx, c, prefix, key)
		r.checkStalled(ctx, hostPort, err)
		err = r.explain(ctx, hostPort, err)
		if to, ok := redis.IsMovedError(err); ok && redirects < maxRedirects {
			// The slot moved since CLUSTER NODES: ask where it went.
			next, aerr := clusterAddr(to, hostPort)
			if aerr != nil {
				return keystatus.Key{}, hostPort, fmt.Errorf("%s: %w: %w", hostPort, err, aerr)
			}
			hostPort = next
			continue
		}
		if to, ok := redis.IsAskError(err); ok {
			if next, aerr := clusterAddr(to, hostPort); aerr == nil {
				to = next
			}
			return keystatus.Key{}, hostPort, fmt.Errorf("%s: the key's slot %d is migrating to %s (ASK): ask again once the migration is over", hostPort, slot, to)
		}
		if err != nil {
			return keystatus.Key{}, hostPort, fmt.Errorf("%s: %w", hostPort, err)
		}
		return k, hostPort, nil
	}
}

// checkStalled records the server at hostPort as stalled when err, a
// command's error, is the end of its timeout. Over TLS (rediss://), it asks
// once whether the server answers in plaintext, as run, hold and doctor do
// (see tlsHints): a server without TLS never answers the handshake.
func (r *keyReader) checkStalled(ctx context.Context, hostPort string, err error) {
	if err != nil && connalive.Timeout(err) {
		if _, ok := r.stalled[hostPort]; !ok {
			r.stalled[hostPort] = err
			if sa, aerr := seedAddr(r.node, hostPort); aerr == nil {
				if said := plaintextAnswer(ctx, sa, r.timeout); said != "" {
					r.notTLS[hostPort] = notTLS(said)
				}
			}
		}
	}
}

// stalledErr returns, for a server recorded as stalled, the error of a key
// not asked of it, and nil otherwise.
func (r *keyReader) stalledErr(hostPort string) error {
	if err := r.stalled[hostPort]; err != nil {
		if hint := r.notTLS[hostPort]; hint != "" {
			return fmt.Errorf("not asked: %s (%w)", hint, err)
		}
		return fmt.Errorf("not asked: the server did not answer within --timeout %v (%v)", r.timeout, err)
	}
	return nil
}

// explain adds to err, a command's error on the server at hostPort, what the
// server says unasked on a new connection (refusalOnConnect) when err is
// the connection's, not the server's reply nor a timeout: a server at
// maxclients answers a new connection with an error reply and closes it,
// which the client sees as a reset connection or EOF. To a timeout it adds
// that the server answers in plaintext, when checkStalled found it so.
func (r *keyReader) explain(ctx context.Context, hostPort string, err error) error {
	var reply redis.Error
	if err != nil && connalive.Timeout(err) && r.notTLS[hostPort] != "" {
		return fmt.Errorf("%w: %s", err, r.notTLS[hostPort])
	}
	if err == nil || connalive.Timeout(err) || errors.As(err, &reply) {
		return err
	}
	said, ok := r.refusals[hostPort]
	if !ok {
		if sa, aerr := seedAddr(r.node, hostPort); aerr == nil {
			said = refusalOnConnect(ctx, sa, r.timeout)
		}
		r.refusals[hostPort] = said
	}
	if said == "" {
		return err
	}
	return fmt.Errorf("%w (on a new connection the server says: %s)", err, said)
}
