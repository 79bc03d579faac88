package redistest

import (
	"context"
	"strconv"

	"github.com/go-redlock/redlock/internal/redisserver"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = redisserver.ClusterSlots

// ClusterOption configures a cluster started by [StartCluster] or
// [NewCluster].
type ClusterOption = redisserver.ClusterOption

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
type Cluster redisserver.Cluster

// Shard is one shard of a [Cluster]: a primary and its replicas.
type Shard redisserver.Shard

// SlotRange is the hash slots from First to Last, both included.
type SlotRange struct {
	First, Last int
}

// Migration is a slot being moved from one shard to another, begun by
// [Cluster.StartMigration]. While it lasts, the shard the slot migrates from
// answers commands on keys it still holds and redirects the others with -ASK
// to the shard it migrates to, which serves them only after ASKING and
// redirects other clients back with -MOVED.
type Migration redisserver.Migration

// WithReplicas gives every shard n replicas besides its primary (default 0).
// They replicate the primary and are listed by [Shard.Replicas].
func WithReplicas(n int) ClusterOption { return redisserver.WithReplicas(n) }

// WithServerOptions applies opts to every server of the cluster, such as
// [WithPassword], [WithTLS] or [WithConfig]. With WithTLS the nodes also
// talk TLS to one another (cluster bus, replication, MIGRATE), presenting the
// client certificate of its [Certs]. The directives that make a server a
// cluster node (cluster-enabled, cluster-config-file, cluster-port,
// cluster-announce-port, cluster-announce-ip, masterauth, tls-cluster,
// tls-replication, tls-client-cert-file and tls-client-key-file) are set by
// StartCluster and make it fail.
func WithServerOptions(opts ...Option) ClusterOption { return redisserver.WithServerOptions(opts...) }

// StartCluster starts a Redis Cluster of shards shards on free ports of
// 127.0.0.1 (of ::1 with [WithServerOptions]([WithIPv6]())): every server with cluster-enabled, the slots split evenly among
// the shards' primaries (CLUSTER ADDSLOTSRANGE), the nodes introduced to one
// another (CLUSTER MEET), each replica attached to its primary (CLUSTER
// REPLICATE). It returns once every node reports cluster_state:ok, knows every
// other node, agrees on which shard serves each slot, and every replica's link
// to its primary is up. ctx bounds the start, which also gives up after a
// minute; the servers run until [Cluster.Close]. Errors are as [Start]'s.
func StartCluster(ctx context.Context, shards int, opts ...ClusterOption) (*Cluster, error) {
	c, err := redisserver.StartCluster(ctx, shards, opts...)
	return (*Cluster)(c), err
}

// KeySlot returns the hash slot of key, as CLUSTER KEYSLOT does: CRC16 of the
// key, or of its hash tag (the text between the first "{" and the first "}"
// after it, if not empty), modulo 16384.
func KeySlot(key string) int { return redisserver.KeySlot(key) }

// Close stops every server of the cluster and removes their directories, as
// [Server.Close] does each. It is idempotent.
func (c *Cluster) Close() error {
	return (*redisserver.Cluster)(c).Close()
}

// Shards returns the cluster's shards, in the order of the slots they were
// given at start: shard 0 serves slot 0.
func (c *Cluster) Shards() []*Shard {
	return shardsOf((*redisserver.Cluster)(c).Shards())
}

// Servers returns every server of the cluster: the shards' primaries in
// shard order, then the replicas.
func (c *Cluster) Servers() []*Server {
	return serversOf((*redisserver.Cluster)(c).Servers())
}

// Seeds returns the addresses of the shards' primaries, "127.0.0.1:PORT" (or "[::1]:PORT"), in
// shard order: the seed addresses a cluster client starts from.
func (c *Cluster) Seeds() []string {
	return (*redisserver.Cluster)(c).Seeds()
}

// URL returns the cluster's address in the syntax the drivers of this module
// accept: "redis://127.0.0.1:PORT?cluster=true&addr=127.0.0.1:PORT2&..."
// (with "[::1]" in place of 127.0.0.1 for a cluster on ::1)
// naming every primary, with the password and TLS files as in [Server.URL].
func (c *Cluster) URL() string {
	return (*redisserver.Cluster)(c).URL()
}

// SlotShard returns the shard that serves slot, as the Cluster last assigned
// it, or nil if slot is not from 0 to 16383. During a migration it is the
// shard the slot is migrating from.
func (c *Cluster) SlotShard(slot int) *Shard {
	return (*Shard)((*redisserver.Cluster)(c).SlotShard(slot))
}

// KeyOn returns a key that begins with prefix and whose slot s serves, as
// [Cluster.SlotShard] says: prefix followed by the least number that puts
// it there ("k" and a shard give "k0", "k1" or another). It returns "" if s
// serves no slot of the keys it tries (a shard without slots).
func (c *Cluster) KeyOn(s *Shard, prefix string) string {
	for i := range 1 << 20 { // a shard with one slot of the 16384 is found in about 16384 tries
		if key := prefix + strconv.Itoa(i); c.SlotShard(KeySlot(key)) == s {
			return key
		}
	}
	return ""
}

// SetAnnouncePort makes the primary of shard announce port instead of its own
// (CONFIG SET cluster-announce-port), so that clients redirected to the shard
// or reading the slot map connect there: to a proxy in front of the shard,
// say, such as the safety module's faultproxy. Port 0 restores the primary's own port. The cluster bus is not
// affected. The setting outlives a [Server.Restart] of the primary. SetAnnouncePort returns once every node of the cluster names the
// primary with the new port, or ctx is done, or a minute has passed.
func (c *Cluster) SetAnnouncePort(ctx context.Context, shard *Shard, port int) error {
	return (*redisserver.Cluster)(c).SetAnnouncePort(ctx, (*redisserver.Shard)(shard), port)
}

// WaitHealthy waits until every node of the cluster reports cluster_state:ok,
// knows every other node at the port it announces and in its role, agrees on
// which shard serves each slot, and every replica's link to its primary is
// up; or until ctx is done or a minute has passed. Every server must be
// running.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	return (*redisserver.Cluster)(c).WaitHealthy(ctx)
}

// MigrateSlot moves slot, with all its keys, to shard to, as
// [Cluster.StartMigration] then [Migration.Finish] do, and returns once every
// node agrees that to serves it.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Shard) error {
	return (*redisserver.Cluster)(c).MigrateSlot(ctx, slot, (*redisserver.Shard)(to))
}

// StartMigration begins moving slot from the shard that serves it to shard
// to: CLUSTER SETSLOT IMPORTING on to's primary, then CLUSTER SETSLOT
// MIGRATING on the source's. No key is moved yet: [Migration.MoveKeys] moves
// some, [Migration.Finish] the rest and ends the migration. A slot can be in
// one migration at a time.
func (c *Cluster) StartMigration(ctx context.Context, slot int, to *Shard) (*Migration, error) {
	v, err := (*redisserver.Cluster)(c).StartMigration(ctx, slot, (*redisserver.Shard)(to))
	return (*Migration)(v), err
}

// Index returns the shard's position in [Cluster.Shards].
func (s *Shard) Index() int {
	return (*redisserver.Shard)(s).Index()
}

// Primary returns the shard's primary, which serves its slots.
func (s *Shard) Primary() *Server {
	return (*Server)((*redisserver.Shard)(s).Primary())
}

// ID returns the cluster node ID of the shard's primary.
func (s *Shard) ID() string {
	return (*redisserver.Shard)(s).ID()
}

// Replicas returns the shard's replicas (see [WithReplicas]).
func (s *Shard) Replicas() []*Server {
	return serversOf((*redisserver.Shard)(s).Replicas())
}

// Slots returns the ranges of slots the shard serves, as the Cluster last
// assigned them, in increasing order.
func (s *Shard) Slots() []SlotRange {
	return slotRangesOf((*redisserver.Shard)(s).Slots())
}

// Slot returns the slot being migrated.
func (m *Migration) Slot() int {
	return (*redisserver.Migration)(m).Slot()
}

// From returns the shard the slot migrates from.
func (m *Migration) From() *Shard {
	return (*Shard)((*redisserver.Migration)(m).From())
}

// To returns the shard the slot migrates to.
func (m *Migration) To() *Shard {
	return (*Shard)((*redisserver.Migration)(m).To())
}

// MoveKeys moves up to n keys of the slot (CLUSTER GETKEYSINSLOT, then
// MIGRATE) from the source to the target and returns them, none once the
// source holds no key of the slot. It leaves the migration in progress, so
// that tests can see -ASK for the keys moved.
func (m *Migration) MoveKeys(ctx context.Context, n int) ([]string, error) {
	return (*redisserver.Migration)(m).MoveKeys(ctx, n)
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
	return (*redisserver.Migration)(m).Finish(ctx)
}

// shardsOf returns shards as this package's type.
func shardsOf(shards []*redisserver.Shard) []*Shard {
	if shards == nil {
		return nil
	}
	s := make([]*Shard, len(shards))
	for i, sh := range shards {
		s[i] = (*Shard)(sh)
	}
	return s
}

// slotRangesOf returns ranges as this package's type.
func slotRangesOf(ranges []redisserver.SlotRange) []SlotRange {
	if ranges == nil {
		return nil
	}
	s := make([]SlotRange, len(ranges))
	for i, r := range ranges {
		s[i] = SlotRange(r)
	}
	return s
}
