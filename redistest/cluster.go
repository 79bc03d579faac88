package redistest

import (
	"context"

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
type Cluster = redisserver.Cluster

// Shard is one shard of a [Cluster]: a primary and its replicas.
type Shard = redisserver.Shard

// SlotRange is the hash slots from First to Last, both included.
type SlotRange = redisserver.SlotRange

// Migration is a slot being moved from one shard to another, begun by
// [Cluster.StartMigration]. While it lasts, the shard the slot migrates from
// answers commands on keys it still holds and redirects the others with -ASK
// to the shard it migrates to, which serves them only after ASKING and
// redirects other clients back with -MOVED.
type Migration = redisserver.Migration

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
	return redisserver.StartCluster(ctx, shards, opts...)
}

// KeySlot returns the hash slot of key, as CLUSTER KEYSLOT does: CRC16 of the
// key, or of its hash tag (the text between the first "{" and the first "}"
// after it, if not empty), modulo 16384.
func KeySlot(key string) int { return redisserver.KeySlot(key) }
