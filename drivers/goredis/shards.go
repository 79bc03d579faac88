package goredis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// batcher is a node's pipelining queue (see package batch).
type batcher = batch.Batcher[rediscmd.Cmd, rediscmd.Result]

// minShardBatchers is how many batchers a cluster node keeps before it
// drops the idle ones that no call used lately (see shards.add).
const minShardBatchers = 16

// mapReaders is how many calls of a cluster node read the slot map at once
// while its client has none (see shards.learn).
const mapReaders = 2

// shards sends the calls of a cluster node through one batcher per shard,
// each bounded as a single server's node is (batch.Senders batches at once,
// of batch.MaxBatch commands each), so that a shard whose primary hangs
// holds the senders, and the queue, of its own keys alone: the calls on the
// keys of the other shards go on, each shard's in pipelines of its own. A
// call goes to the batcher of its key's primary, by the address that
// go-redis' slot map gives it (ClusterClient.MasterForKey: a lookup, once
// the client has the map).
//
// Until the client has its slot map, a call first has it read (see learn),
// so that the first calls are routed as the later ones are: none waits in
// a queue behind the calls of a shard that hangs, also on the node's first
// use. The node's first batcher takes the calls whose lookup fails (they
// fail there as they would anywhere).
type shards struct {
	client  *redis.ClusterClient
	exec    batch.Exec[rediscmd.Cmd, rediscmd.Result]
	share   bool          // the batchers share deadlines (see batch.Batcher.ShareDeadlines)
	known   atomic.Bool   // the client has its slot map: MasterForKey does not block
	ready   chan struct{} // closed once known is set
	readers chan struct{} // a token per call reading the slot map (see learn)

	// waiting holds, by call, when each call now in learn began: its
	// command is not sent before the map is known (see pending).
	waitMu  sync.Mutex
	waiting map[*byte]time.Time

	// by maps a primary's address to its batcher. The map is replaced,
	// never changed, under mu.
	by    atomic.Pointer[map[string]*shard]
	mu    sync.Mutex
	limit int // the size at which add drops the idle batchers
}

// shard is the batcher of a primary, and whether a call looked it up since
// add last dropped batchers (see add).
type shard struct {
	b    *batcher
	used atomic.Bool
}

// newShards returns the shards of a node over c, whose batchers send with
// exec.
func newShards(c *redis.ClusterClient, exec batch.Exec[rediscmd.Cmd, rediscmd.Result]) *shards {
	return &shards{client: c, exec: exec, limit: minShardBatchers,
		ready: make(chan struct{}), readers: make(chan struct{}, mapReaders)}
}

// learn returns nil once the client has its slot map; else the error of
// this call's read of it, or ctx's once ctx ended. While the client has no
// map, at most mapReaders calls read it at once, each with read, bounded by
// the call's context (ClusterClient.MasterForKey: go-redis asks its seeds
// for CLUSTER SLOTS, one after the other, and keeps the map it gets); the
// other calls wait for the map, or for a read to end, when one of them reads
// in its place, as long as their contexts allow. A read that fails fails
// its call, as go-redis would fail the command: a call that reads the map
// when none can be read (every seed down, say) is never sent.
//
// While in learn, a call counts in pending, its command not yet sent.
func (s *shards) learn(ctx context.Context, read func(context.Context) error) error {
	if s.known.Load() {
		return nil
	}
	defer s.wait()()
	select {
	case <-s.ready:
		return nil
	case s.readers <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.readers }()
	if s.known.Load() { // read while this call waited
		return nil
	}
	if err := read(ctx); err != nil {
		return err
	}
	s.learned()
	return nil
}

// wait records a call entering learn, for pending, and returns the function
// that records its leaving.
func (s *shards) wait() (left func()) {
	id := new(byte)
	s.waitMu.Lock()
	if s.waiting == nil {
		s.waiting = make(map[*byte]time.Time)
	}
	s.waiting[id] = time.Now()
	s.waitMu.Unlock()
	return func() {
		s.waitMu.Lock()
		delete(s.waiting, id)
		s.waitMu.Unlock()
	}
}

// learned records that the client has its slot map: it never forgets one.
func (s *shards) learned() {
	if s.known.CompareAndSwap(false, true) {
		close(s.ready)
	}
}

// batcher returns the batcher of key's shard and its primary's address, or
// first and "" while the client has no slot map (see learn) or when the
// lookup fails.
func (s *shards) batcher(ctx context.Context, key string, first *batcher) (*batcher, string) {
	if !s.known.Load() {
		return first, ""
	}
	primary, err := s.client.MasterForKey(ctx, key)
	if err != nil {
		return first, "" // the command fails there as it would anywhere
	}
	addr := primary.Options().Addr
	if m := s.by.Load(); m != nil {
		if sh := (*m)[addr]; sh != nil {
			if !sh.used.Load() { // a load only, on the common path
				sh.used.Store(true)
			}
			return sh.b, addr
		}
	}
	return s.add(addr), addr
}

// add returns the batcher of the primary at addr, made if there is none.
// The batchers of the addresses a failover left behind would stay in the
// map: when it reaches its limit, add drops those that are idle and that no
// call looked up since it last dropped batchers (a batcher is made again for
// an address that comes back), and sets the limit to twice what is left. The
// batchers of the primaries that serve calls stay, however idle each is
// between calls, also when there are more of them than minShardBatchers.
func (s *shards) add(addr string) *batcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old map[string]*shard
	if m := s.by.Load(); m != nil {
		old = *m
	}
	if sh := old[addr]; sh != nil {
		sh.used.Store(true)
		return sh.b
	}
	prune := len(old)+1 > s.limit
	m := make(map[string]*shard, len(old)+1)
	for a, sh := range old {
		if !prune {
			m[a] = sh
		} else if sh.used.Swap(false) || !sh.b.Idle() {
			m[a] = sh
		}
	}
	b := batch.New(s.exec, batch.Senders, batch.MaxBatch)
	if s.share {
		b.ShareDeadlines()
	}
	sh := &shard{b: b}
	sh.used.Store(true)
	m[addr] = sh
	if prune {
		s.limit = max(minShardBatchers, 2*len(m))
	}
	s.by.Store(&m)
	return b
}

// pending adds the queues of the shards' batchers to p, the first
// batcher's (see driver.Queuer), and the calls in learn: each waits, its
// command unsent, for the slot map (read by its own call or another).
func (s *shards) pending(p driver.Pending) driver.Pending {
	s.waitMu.Lock()
	now := time.Now()
	for _, since := range s.waiting {
		p.Depth++
		p.Oldest = max(p.Oldest, now.Sub(since))
	}
	s.waitMu.Unlock()
	m := s.by.Load()
	if m == nil {
		return p
	}
	for _, sh := range *m {
		q := sh.b.Pending()
		p.Depth += q.Depth
		p.Oldest = max(p.Oldest, q.Oldest)
	}
	return p
}
