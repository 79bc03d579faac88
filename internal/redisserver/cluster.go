package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// clusterTimeout bounds how long StartCluster, a migration or a change of
// announced port waits for the cluster to agree.
const clusterTimeout = 60 * time.Second

// maxClusterServers bounds the number of servers of a cluster.
const maxClusterServers = 64

// migrateBatch is how many keys one MIGRATE moves when a migration is
// finished.
const migrateBatch = 100

// clusterManaged are the directives StartCluster sets itself and refuses from
// [WithServerOptions].
var clusterManaged = map[string]string{
	"cluster-enabled":       "StartCluster enables it",
	"cluster-config-file":   "StartCluster keeps nodes.conf in each server's directory",
	"cluster-port":          "StartCluster picks a free cluster bus port",
	"cluster-announce-port": "use Cluster.SetAnnouncePort",
	"cluster-announce-ip":   "cluster nodes announce the loopback address they listen on",
	"masterauth":            "StartCluster sets it from WithPassword",
	"tls-cluster":           "StartCluster sets it from WithTLS",
	"tls-replication":       "StartCluster sets it from WithTLS",
	"tls-client-cert-file":  "StartCluster sets it from WithTLS",
	"tls-client-key-file":   "StartCluster sets it from WithTLS",
}

// ClusterOption configures a cluster started by [StartCluster] or
// [NewCluster].
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	replicas int
	opts     []Option
	err      error
}

// WithReplicas gives every shard n replicas besides its primary (default 0).
// They replicate the primary and are listed by [Shard.Replicas].
func WithReplicas(n int) ClusterOption {
	return func(c *clusterConfig) {
		if (n < 0 || n >= maxClusterServers) && c.err == nil {
			c.err = fmt.Errorf("redistest: WithReplicas(%d): want 0 to %d replicas", n, maxClusterServers-1)
		}
		c.replicas = n
	}
}

// WithServerOptions applies opts to every server of the cluster, such as
// [WithPassword], [WithTLS] or [WithConfig]. With WithTLS the nodes also
// talk TLS to one another (cluster bus, replication, MIGRATE), presenting the
// client certificate of its [Certs]. The directives that make a server a
// cluster node (cluster-enabled, cluster-config-file, cluster-port,
// cluster-announce-port, cluster-announce-ip, masterauth, tls-cluster,
// tls-replication, tls-client-cert-file and tls-client-key-file) are set by
// StartCluster and make it fail.
func WithServerOptions(opts ...Option) ClusterOption {
	opts = slices.Clone(opts)
	return func(c *clusterConfig) { c.opts = append(c.opts, opts...) }
}

// Cluster is a Redis Cluster of redis-server processes on 127.0.0.1 (on ::1
// with [WithServerOptions]([WithIPv6]())), started
// by [StartCluster] or [NewCluster]: shards, each a primary serving a share of
// the 16384 hash slots and its replicas, every node with its cluster
// configuration (nodes.conf) in its own temporary directory. Its methods are
// safe for concurrent use.
//
// The Cluster remembers which shard serves each slot: the even split it made
// at start, then the migrations it made ([Cluster.MigrateSlot]). A failover
// (a replica promoted after its primary failed) is not followed: after one,
// [Cluster.WaitHealthy] reports a disagreement.
type Cluster struct {
	shards []*Shard
	nodes  []*clusterNode // primaries first, in shard order, then replicas

	mu     sync.Mutex
	owner  [ClusterSlots]int // index of the shard serving each slot
	moving map[int]bool      // slots being migrated
}

// Shard is one shard of a [Cluster]: a primary and its replicas.
type Shard struct {
	c        *Cluster
	index    int
	primary  *clusterNode
	replicas []*clusterNode
}

// clusterNode is one server of a cluster.
type clusterNode struct {
	srv      *Server
	id       string // the cluster node ID
	bus      int    // cluster bus port
	primary  *clusterNode
	announce int // cluster-announce-port; 0 for the server's own port. Guarded by Cluster.mu.
}

// SlotRange is the hash slots from First to Last, both included.
type SlotRange struct {
	First, Last int
}

// StartCluster starts a Redis Cluster of shards shards on free ports of
// 127.0.0.1 (of ::1 with [WithServerOptions]([WithIPv6]())): every server with cluster-enabled, the slots split evenly among
// the shards' primaries (CLUSTER ADDSLOTSRANGE), the nodes introduced to one
// another (CLUSTER MEET), each replica attached to its primary (CLUSTER
// REPLICATE). It returns once every node reports cluster_state:ok, knows every
// other node, agrees on which shard serves each slot, and every replica's link
// to its primary is up. ctx bounds the start, which also gives up after a
// minute; the servers run until [Cluster.Close]. Errors are as [Start]'s.
func StartCluster(ctx context.Context, shards int, opts ...ClusterOption) (*Cluster, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	var cfg clusterConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	switch {
	case cfg.err != nil:
		return nil, cfg.err
	case shards < 1:
		return nil, fmt.Errorf("redistest: StartCluster: %d shards, want at least 1", shards)
	case shards > maxClusterServers/(1+cfg.replicas): // shards*(1+replicas) could overflow
		per := "1 server"
		if cfg.replicas > 0 {
			per = fmt.Sprintf("%d servers", 1+cfg.replicas)
		}
		return nil, fmt.Errorf("redistest: StartCluster: %d shards of %s each is more than %d servers", shards, per, maxClusterServers)
	}
	var probe config
	for _, opt := range cfg.opts {
		if opt != nil {
			opt(&probe)
		}
	}
	switch {
	case probe.err != nil:
		return nil, probe.err
	}
	for _, d := range probe.directives {
		if why, ok := clusterManaged[strings.ToLower(d[0])]; ok {
			return nil, fmt.Errorf("redistest: StartCluster cannot take directive %q: %s", d[0], why)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()

	c := &Cluster{moving: make(map[int]bool)}
	n := shards * (1 + cfg.replicas)
	c.nodes = make([]*clusterNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { c.nodes[i], errs[i] = startClusterNode(ctx, cfg.opts, probe) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		for _, e := range errs {
			if errors.Is(e, ErrNotInstalled) {
				return nil, e // the same for every server
			}
		}
		return nil, err
	}
	for i := range shards {
		s := &Shard{c: c, index: i, primary: c.nodes[i]}
		for r := range cfg.replicas {
			node := c.nodes[shards+i*cfg.replicas+r]
			node.primary = s.primary
			s.replicas = append(s.replicas, node)
		}
		c.shards = append(c.shards, s)
		first, last := i*ClusterSlots/shards, (i+1)*ClusterSlots/shards-1
		for slot := first; slot <= last; slot++ {
			c.owner[slot] = i
		}
	}
	if err := c.form(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startClusterNode starts one cluster-enabled server, on a new cluster bus
// port if the one it picked is taken.
func startClusterNode(ctx context.Context, opts []Option, cfg config) (*clusterNode, error) {
	for attempt := 1; ; attempt++ {
		bus, err := freePort(cfg.host())
		if err != nil {
			return nil, err
		}
		// A replica's first sync need not wait 5s for others to join it.
		o := append([]Option{WithConfig("repl-diskless-sync-delay", "0")}, opts...)
		o = append(o,
			WithConfig("cluster-enabled", "yes"),
			WithConfig("cluster-config-file", "nodes.conf"), // relative to the server's --dir
			WithConfig("cluster-port", strconv.Itoa(bus)),
		)
		if cfg.password != "" {
			o = append(o, WithConfig("masterauth", cfg.password))
		}
		if cfg.tls != nil {
			// TLS between the nodes too: the cluster bus, MIGRATE and
			// replication, each node presenting the client certificate
			// when it connects to another.
			o = append(o,
				WithConfig("tls-cluster", "yes"),
				WithConfig("tls-replication", "yes"),
				WithConfig("tls-client-cert-file", cfg.tls.certs.ClientCertFile),
				WithConfig("tls-client-key-file", cfg.tls.certs.ClientKeyFile),
			)
		}
		srv, err := Start(ctx, o...)
		if err == nil {
			return &clusterNode{srv: srv, bus: bus}, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == startAttempts {
			return nil, err
		}
	}
}

// form makes the started servers one cluster and waits until it is healthy.
func (c *Cluster) form(ctx context.Context) error {
	for i, n := range c.nodes {
		id, err := n.srv.Do(ctx, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		if n.id, _ = id.(string); n.id == "" {
			return fmt.Errorf("redistest: CLUSTER MYID on %s: unexpected reply %v", n.srv.addr, id)
		}
		// Distinct epochs from the start, as redis-cli --cluster create
		// does, rather than waiting for the nodes to resolve collisions.
		if _, err := n.srv.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for _, s := range c.shards {
		for _, r := range s.Slots() {
			if _, err := s.primary.srv.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(r.First), strconv.Itoa(r.Last)); err != nil {
				return err
			}
		}
	}
	// Each replica first meets its primary and follows it, so that the
	// other nodes learn its role as they meet it rather than by gossip
	// later; then every pair of nodes meets directly, which spares waiting
	// for gossip (a few seconds) to introduce them.
	met := make(map[[2]*clusterNode]bool)
	meet := func(a, b *clusterNode) error {
		if met[[2]*clusterNode{a, b}] || met[[2]*clusterNode{b, a}] {
			return nil
		}
		met[[2]*clusterNode{a, b}] = true
		_, err := a.srv.Do(ctx, "CLUSTER", "MEET", b.srv.cfg.host(), strconv.Itoa(b.srv.port), strconv.Itoa(b.bus))
		return err
	}
	if len(c.nodes) > len(c.shards) {
		for _, s := range c.shards {
			for _, r := range s.replicas {
				if err := meet(r, s.primary); err != nil {
					return err
				}
			}
		}
		// A replica can follow its primary only once it knows it.
		if err := c.wait(ctx, "every replica to know its primary", c.checkReplicasKnowPrimaries); err != nil {
			return err
		}
		for _, s := range c.shards {
			for _, r := range s.replicas {
				if _, err := r.srv.Do(ctx, "CLUSTER", "REPLICATE", s.primary.id); err != nil {
					return err
				}
			}
		}
	}
	for i, a := range c.nodes {
		for _, b := range c.nodes[i+1:] {
			if err := meet(a, b); err != nil {
				return err
			}
		}
	}
	return c.WaitHealthy(ctx)
}

// Close stops every server of the cluster and removes their directories, as
// [Server.Close] does each. It is idempotent.
func (c *Cluster) Close() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if n != nil {
			wg.Go(func() { errs[i] = n.srv.Close() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Shards returns the cluster's shards, in the order of the slots they were
// given at start: shard 0 serves slot 0.
func (c *Cluster) Shards() []*Shard { return slices.Clone(c.shards) }

// Servers returns every server of the cluster: the shards' primaries in
// shard order, then the replicas.
func (c *Cluster) Servers() []*Server {
	servers := make([]*Server, len(c.nodes))
	for i, n := range c.nodes {
		servers[i] = n.srv
	}
	return servers
}

// Seeds returns the addresses of the shards' primaries, "127.0.0.1:PORT" (or "[::1]:PORT"), in
// shard order: the seed addresses a cluster client starts from.
func (c *Cluster) Seeds() []string {
	seeds := make([]string, len(c.shards))
	for i, s := range c.shards {
		seeds[i] = s.primary.srv.addr
	}
	return seeds
}

// URL returns the cluster's address in the syntax the drivers of this module
// accept: "redis://127.0.0.1:PORT?cluster=true&addr=127.0.0.1:PORT2&..."
// (with "[::1]" in place of 127.0.0.1 for a cluster on ::1)
// naming every primary, with the password and TLS files as in [Server.URL].
func (c *Cluster) URL() string {
	base, tlsQuery, _ := strings.Cut(c.shards[0].primary.srv.URL(), "?")
	q := []string{"cluster=true"}
	for _, seed := range c.Seeds()[1:] {
		q = append(q, "addr="+seed)
	}
	if tlsQuery != "" {
		q = append(q, tlsQuery)
	}
	return base + "?" + strings.Join(q, "&")
}

// SlotShard returns the shard that serves slot, as the Cluster last assigned
// it, or nil if slot is not from 0 to 16383. During a migration it is the
// shard the slot is migrating from.
func (c *Cluster) SlotShard(slot int) *Shard {
	if slot < 0 || slot >= ClusterSlots {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shards[c.owner[slot]]
}

// Index returns the shard's position in [Cluster.Shards].
func (s *Shard) Index() int { return s.index }

// Primary returns the shard's primary, which serves its slots.
func (s *Shard) Primary() *Server { return s.primary.srv }

// ID returns the cluster node ID of the shard's primary.
func (s *Shard) ID() string { return s.primary.id }

// Replicas returns the shard's replicas (see [WithReplicas]).
func (s *Shard) Replicas() []*Server {
	servers := make([]*Server, len(s.replicas))
	for i, r := range s.replicas {
		servers[i] = r.srv
	}
	return servers
}

// Slots returns the ranges of slots the shard serves, as the Cluster last
// assigned them, in increasing order.
func (s *Shard) Slots() []SlotRange {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	var ranges []SlotRange
	for slot := range ClusterSlots {
		if s.c.owner[slot] != s.index {
			continue
		}
		if k := len(ranges) - 1; k >= 0 && ranges[k].Last == slot-1 {
			ranges[k].Last = slot
		} else {
			ranges = append(ranges, SlotRange{slot, slot})
		}
	}
	return ranges
}

// SetAnnouncePort makes the primary of shard announce port instead of its own
// (CONFIG SET cluster-announce-port), so that clients redirected to the shard
// or reading the slot map connect there: to a proxy in front of the shard,
// say, such as the safety module's faultproxy. Port 0 restores the primary's own port. The cluster bus is not
// affected. The setting outlives a [Server.Restart] of the primary. SetAnnouncePort returns once every node of the cluster names the
// primary with the new port, or ctx is done, or a minute has passed.
func (c *Cluster) SetAnnouncePort(ctx context.Context, shard *Shard, port int) error {
	if ctx == nil {
		return errNilContext
	}
	if err := c.checkShard(shard); err != nil {
		return err
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("redistest: SetAnnouncePort: port %d is not from 0 to 65535", port)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	srv := shard.primary.srv
	p := strconv.Itoa(port)
	if _, err := srv.Do(ctx, "CONFIG", "SET", "cluster-announce-port", p); err != nil {
		return err
	}
	srv.setDirective("cluster-announce-port", p) // for Restart
	c.mu.Lock()
	shard.primary.announce = port
	c.mu.Unlock()
	return c.WaitHealthy(ctx)
}

// setDirective sets a configuration directive for the server's next
// starts ([Server.Restart]), replacing any earlier value.
func (s *Server) setDirective(name string, values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := slices.DeleteFunc(slices.Clone(s.cfg.directives), func(d []string) bool { return strings.EqualFold(d[0], name) })
	s.cfg.directives = append(d, append([]string{name}, values...))
}

// checkShard returns an error unless s is a shard of c.
func (c *Cluster) checkShard(s *Shard) error {
	if s == nil || s.c != c {
		return errors.New("redistest: the shard is not one of this cluster's")
	}
	return nil
}

// WaitHealthy waits until every node of the cluster reports cluster_state:ok,
// knows every other node at the port it announces and in its role, agrees on
// which shard serves each slot, and every replica's link to its primary is
// up; or until ctx is done or a minute has passed. Every server must be
// running.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	return c.wait(ctx, "the cluster to be healthy", c.checkHealthy)
}

// wait polls check until it returns nil, ctx is done or clusterTimeout has
// passed.
func (c *Cluster) wait(ctx context.Context, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redistest: wait for %s: %w (last check: %w)", what, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// clusterView is one node's CLUSTER NODES: the nodes it knows by ID.
type clusterView map[string]viewEntry

type viewEntry struct {
	port    int
	flags   []string
	primary string // the primary's ID for a replica, "-" for a primary
	epoch   uint64 // the node's config epoch, as the viewer knows it
	slots   []SlotRange
}

// view reads n's CLUSTER NODES.
func (n *clusterNode) view(ctx context.Context) (clusterView, error) {
	v, err := n.srv.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	text, _ := v.(string)
	return parseClusterNodes(text)
}

// parseClusterNodes parses the reply of CLUSTER NODES.
func parseClusterNodes(text string) (clusterView, error) {
	view := make(clusterView)
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: too few fields", line)
		}
		// f[1] is ip:port@cport[,hostname], an IPv6 ip without brackets
		addr, _, _ := strings.Cut(f[1], "@")
		i := strings.LastIndexByte(addr, ':')
		port, err := strconv.Atoi(addr[i+1:])
		if i < 0 || err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: address %q", line, f[1])
		}
		epoch, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: config epoch %q", line, f[6])
		}
		e := viewEntry{port: port, flags: strings.Split(f[2], ","), primary: f[3], epoch: epoch}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being imported or migrated: "[slot->-id]", "[slot-<-id]"
			}
			first, last, _ := strings.Cut(s, "-")
			if last == "" {
				last = first
			}
			a, err1 := strconv.Atoi(first)
			b, err2 := strconv.Atoi(last)
			if err1 != nil || err2 != nil || a < 0 || b < a || b >= ClusterSlots {
				return nil, fmt.Errorf("redistest: CLUSTER NODES line %q: slots %q", line, s)
			}
			e.slots = append(e.slots, SlotRange{a, b})
		}
		view[f[0]] = e
	}
	return view, nil
}

// checkReplicasKnowPrimaries returns nil if every replica knows its
// primary, past the handshake.
func (c *Cluster) checkReplicasKnowPrimaries(ctx context.Context) error {
	for _, n := range c.nodes {
		if n.primary == nil {
			continue
		}
		view, err := n.view(ctx)
		if err != nil {
			return err
		}
		if e, ok := view[n.primary.id]; !ok || slices.Contains(e.flags, "handshake") {
			return fmt.Errorf("replica %s does not know its primary %s yet", n.srv.addr, n.primary.srv.addr)
		}
	}
	return nil
}

// checkEpochs returns nil if every node knows every node's config epoch as
// that node has it.
func (c *Cluster) checkEpochs(ctx context.Context) error {
	views := make([]clusterView, len(c.nodes))
	own := make(map[string]uint64, len(c.nodes))
	for i, n := range c.nodes {
		view, err := n.view(ctx)
		if err != nil {
			return err
		}
		views[i] = view
		e, ok := view[n.id]
		if !ok {
			return fmt.Errorf("node %s does not list itself", n.srv.addr)
		}
		own[n.id] = e.epoch
	}
	for i, n := range c.nodes {
		for _, m := range c.nodes {
			e, ok := views[i][m.id]
			if !ok {
				return fmt.Errorf("node %s does not know node %s", n.srv.addr, m.srv.addr)
			}
			if e.epoch != own[m.id] {
				return fmt.Errorf("node %s knows node %s's config epoch as %d, not %d", n.srv.addr, m.srv.addr, e.epoch, own[m.id])
			}
		}
	}
	return nil
}

// checkHealthy returns nil if the cluster is as WaitHealthy waits for.
func (c *Cluster) checkHealthy(ctx context.Context) error {
	c.mu.Lock()
	owner := c.owner
	announce := make(map[*clusterNode]int, len(c.nodes))
	for _, n := range c.nodes {
		announce[n] = n.announce
	}
	c.mu.Unlock()

	for _, n := range c.nodes {
		info, err := n.srv.Do(ctx, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if s, _ := info.(string); !strings.Contains(s, "cluster_state:ok") {
			return fmt.Errorf("node %s: cluster_state is not ok", n.srv.addr)
		}
		view, err := n.view(ctx)
		if err != nil {
			return err
		}
		if len(view) != len(c.nodes) {
			return fmt.Errorf("node %s knows %d nodes, want %d", n.srv.addr, len(view), len(c.nodes))
		}
		var seen [ClusterSlots]string
		for _, m := range c.nodes {
			e, ok := view[m.id]
			if !ok {
				return fmt.Errorf("node %s does not know node %s", n.srv.addr, m.srv.addr)
			}
			want := m.srv.port
			if announce[m] != 0 {
				want = announce[m]
			}
			if e.port != want {
				return fmt.Errorf("node %s sees node %s at port %d, want %d", n.srv.addr, m.srv.addr, e.port, want)
			}
			for _, f := range e.flags {
				switch f {
				case "fail", "fail?", "handshake", "noaddr":
					return fmt.Errorf("node %s sees node %s as %s", n.srv.addr, m.srv.addr, f)
				}
			}
			wantPrimary := "-"
			if m.primary != nil {
				wantPrimary = m.primary.id
			}
			if e.primary != wantPrimary {
				return fmt.Errorf("node %s sees node %s following %q, want %q", n.srv.addr, m.srv.addr, e.primary, wantPrimary)
			}
			for _, r := range e.slots {
				for slot := r.First; slot <= r.Last; slot++ {
					seen[slot] = m.id
				}
			}
		}
		for slot, id := range seen {
			if want := c.shards[owner[slot]].primary.id; id != want {
				return fmt.Errorf("node %s sees slot %d served by %q, want %q (%s)", n.srv.addr, slot, id, want, c.shards[owner[slot]].primary.srv.addr)
			}
		}
		if n.primary != nil {
			v, err := n.srv.Do(ctx, "INFO", "replication")
			if err != nil {
				return err
			}
			if s, _ := v.(string); !strings.Contains(s, "master_link_status:up") {
				return fmt.Errorf("replica %s: link to its primary is not up", n.srv.addr)
			}
		}
	}
	return nil
}

// MigrateSlot moves slot, with all its keys, to shard to, as
// [Cluster.StartMigration] then [Migration.Finish] do, and returns once every
// node agrees that to serves it.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Shard) error {
	if ctx == nil {
		return errNilContext
	}
	m, err := c.StartMigration(ctx, slot, to)
	if err != nil {
		return err
	}
	return m.Finish(ctx)
}

// Migration is a slot being moved from one shard to another, begun by
// [Cluster.StartMigration]. While it lasts, the shard the slot migrates from
// answers commands on keys it still holds and redirects the others with -ASK
// to the shard it migrates to, which serves them only after ASKING and
// redirects other clients back with -MOVED.
type Migration struct {
	c        *Cluster
	slot     int
	from, to *Shard

	mu       sync.Mutex
	finished bool
}

// StartMigration begins moving slot from the shard that serves it to shard
// to: CLUSTER SETSLOT IMPORTING on to's primary, then CLUSTER SETSLOT
// MIGRATING on the source's. No key is moved yet: [Migration.MoveKeys] moves
// some, [Migration.Finish] the rest and ends the migration. A slot can be in
// one migration at a time.
func (c *Cluster) StartMigration(ctx context.Context, slot int, to *Shard) (*Migration, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := c.checkShard(to); err != nil {
		return nil, err
	}
	if slot < 0 || slot >= ClusterSlots {
		return nil, fmt.Errorf("redistest: StartMigration: slot %d is not from 0 to %d", slot, ClusterSlots-1)
	}
	c.mu.Lock()
	from := c.shards[c.owner[slot]]
	switch {
	case c.moving[slot]:
		c.mu.Unlock()
		return nil, fmt.Errorf("redistest: StartMigration: slot %d is already being migrated", slot)
	case from == to:
		c.mu.Unlock()
		return nil, fmt.Errorf("redistest: StartMigration: slot %d is already served by shard %d", slot, to.index)
	}
	c.moving[slot] = true
	c.mu.Unlock()

	s := strconv.Itoa(slot)
	_, err := to.primary.srv.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", from.primary.id)
	if err == nil {
		_, err = from.primary.srv.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", to.primary.id)
	}
	if err != nil {
		// Undo what was done, best effort, on a context of its own: ctx
		// may be what failed.
		undo, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, err1 := to.primary.srv.Do(undo, "CLUSTER", "SETSLOT", s, "STABLE")
		_, err2 := from.primary.srv.Do(undo, "CLUSTER", "SETSLOT", s, "STABLE")
		c.mu.Lock()
		delete(c.moving, slot)
		c.mu.Unlock()
		return nil, errors.Join(fmt.Errorf("redistest: start migrating slot %d: %w", slot, err), err1, err2)
	}
	return &Migration{c: c, slot: slot, from: from, to: to}, nil
}

// Slot returns the slot being migrated.
func (m *Migration) Slot() int { return m.slot }

// From returns the shard the slot migrates from.
func (m *Migration) From() *Shard { return m.from }

// To returns the shard the slot migrates to.
func (m *Migration) To() *Shard { return m.to }

// MoveKeys moves up to n keys of the slot (CLUSTER GETKEYSINSLOT, then
// MIGRATE) from the source to the target and returns them, none once the
// source holds no key of the slot. It leaves the migration in progress, so
// that tests can see -ASK for the keys moved.
func (m *Migration) MoveKeys(ctx context.Context, n int) ([]string, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if n < 1 {
		return nil, fmt.Errorf("redistest: MoveKeys(%d): n must be positive", n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return nil, fmt.Errorf("redistest: MoveKeys: the migration of slot %d is finished", m.slot)
	}
	return m.moveKeysLocked(ctx, n)
}

func (m *Migration) moveKeysLocked(ctx context.Context, n int) ([]string, error) {
	src, dst := m.from.primary.srv, m.to.primary.srv
	v, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.slot), strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	elems, _ := v.([]any)
	if len(elems) == 0 {
		return nil, nil
	}
	keys := make([]string, len(elems))
	for i, e := range elems {
		keys[i], _ = e.(string)
	}
	args := []string{"MIGRATE", dst.cfg.host(), strconv.Itoa(dst.port), "", "0", "10000"}
	if dst.cfg.password != "" {
		args = append(args, "AUTH", dst.cfg.password)
	}
	args = append(args, "KEYS")
	if _, err := src.Do(ctx, append(args, keys...)...); err != nil {
		return nil, fmt.Errorf("redistest: migrate %d keys of slot %d from %s to %s: %w", len(keys), m.slot, src.addr, dst.addr, err)
	}
	return keys, nil
}

// Finish moves the keys of the slot that are left, waits until every node
// knows every node's config epoch (so that the target takes the slot under
// an epoch above all others, which a claim of the source's still on its way
// cannot undo), assigns the slot to the target on every primary (CLUSTER
// SETSLOT NODE: the target's first, then the source's, then the others')
// and returns once every node agrees, or ctx is
// done, or a minute has passed. From then on the source answers the slot's
// keys with -MOVED to the target. Finish after a successful Finish does
// nothing.
func (m *Migration) Finish(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	for {
		keys, err := m.moveKeysLocked(ctx, migrateBatch)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
	}
	c, s := m.c, strconv.Itoa(m.slot)
	// The target takes the slot under a config epoch above every other
	// node's only if it knows them all (SETSLOT NODE bumps its epoch past
	// the greatest it knows): under a lower one, a claim of the slot that
	// the source sent before it gave the slot up, still on its way over
	// the cluster bus, wins, and the slot goes back to the source, which no
	// longer holds its keys.
	if err := c.wait(ctx, "every node to know every config epoch", c.checkEpochs); err != nil {
		return err
	}
	order := []*Shard{m.to, m.from}
	for _, sh := range c.shards {
		if sh != m.to && sh != m.from {
			order = append(order, sh)
		}
	}
	for _, sh := range order {
		if _, err := sh.primary.srv.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", m.to.primary.id); err != nil {
			return fmt.Errorf("redistest: assign slot %d to shard %d: %w", m.slot, m.to.index, err)
		}
	}
	m.finished = true
	c.mu.Lock()
	c.owner[m.slot] = m.to.index
	delete(c.moving, m.slot)
	c.mu.Unlock()
	return c.WaitHealthy(ctx)
}

// KeySlot returns the hash slot of key, as CLUSTER KEYSLOT does: CRC16 of the
// key, or of its hash tag (the text between the first "{" and the first "}"
// after it, if not empty), modulo 16384. It is driver.HashSlot, the
// library's own definition.
func KeySlot(key string) int { return driver.HashSlot(key) }
