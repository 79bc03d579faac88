package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// The parameters of the Cluster case.
var (
	clusterShards  = []int{0, 1, 2, 3} // 0: single servers
	clusterNodes   = 3
	clusterLockers = 64
)

// Cluster benchmarks lock+unlock over three nodes that are single servers
// (shards=0) or Redis Clusters of 1, 2 and 3 shards each (shards=N), 64
// lockers each on a key of its own. Besides the metrics of every case it
// reports the servers' CPU per operation (server-cpu-us/op: the growth of
// used_cpu_sys+used_cpu_user in INFO CPU, summed over every server of every
// node, over b.N operations), which says how the cost is divided and what
// more cores would buy. Only contenders with a cluster client (c.Cluster)
// run it.
func Cluster(b *testing.B, c Contender) {
	b.Helper()
	for _, shards := range clusterShards {
		addrs, servers := clusterSet(b, shards)
		name := fmt.Sprintf("shards=%d/lockers=%d", shards, clusterLockers)
		withLocker(b, c, addrs, name, clusterLockers, nil, func(b *testing.B, lk Locker) {
			ctx, cancel := runContext(b)
			defer cancel()
			keys := newKeys("cluster", clusterLockers)
			before, err := serverCPU(ctx, servers)
			if err != nil {
				b.Fatal(err)
			}
			measure(b, clusterLockers, func(g int) error { return lockUnlock(ctx, lk, keys[g]) })
			after, err := serverCPU(ctx, servers)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric((after-before).Seconds()*1e6/float64(b.N), "server-cpu-us/op")
		})
	}
}

// clusterSet starts the nodes of the Cluster case for shards, stopped when b
// ends, and returns their addresses and every server of theirs.
func clusterSet(b *testing.B, shards int) ([]string, []*redistest.Server) {
	b.Helper()
	if shards == 0 {
		servers := redistest.NewServers(b, clusterNodes)
		return redistest.Addrs(servers), servers
	}
	clusters := redistest.NewClusters(b, clusterNodes, shards)
	var (
		addrs   []string
		servers []*redistest.Server
	)
	for _, cl := range clusters {
		if cl == nil {
			b.FailNow() // NewCluster failed b
		}
		addrs = append(addrs, cl.URL())
		servers = append(servers, cl.Servers()...)
	}
	return addrs, servers
}

// serverCPU returns the CPU time the servers have used, system and user.
func serverCPU(ctx context.Context, servers []*redistest.Server) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var total float64
	for _, s := range servers {
		v, err := s.Do(ctx, "INFO", "CPU")
		if err != nil {
			return 0, fmt.Errorf("INFO CPU of %s: %w", s.Addr(), err)
		}
		text, _ := v.(string)
		for line := range strings.Lines(text) {
			name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
				f, err := strconv.ParseFloat(value, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO CPU of %s: %s: %w", s.Addr(), name, err)
				}
				total += f
			}
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}
