package chaos

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// Fault is a kind of fault that Run applies to one node at a time.
type Fault string

// The faults Redlock tolerates when they hit no more than a minority of nodes.
const (
	// Pause stops the node's process (SIGSTOP) and resumes it (SIGCONT).
	Pause Fault = "pause"
	// Cut closes the node's connections, and new ones as they come, for a
	// while.
	Cut Fault = "cut"
	// Blackhole accepts connections to the node and answers nothing.
	Blackhole Fault = "blackhole"
	// Latency delays requests and replies by up to twice the node timeout.
	Latency Fault = "latency"
	// LoseReplies forwards requests to the node and swallows its replies.
	LoseReplies Fault = "lose-replies"
	// KillRestart kills the node (SIGKILL) and starts it again, empty, after
	// more than the TTL: a delayed restart.
	KillRestart Fault = "kill+delayed-restart"
)

// AllFaults lists every Fault.
var AllFaults = []Fault{Pause, Cut, Blackhole, Latency, LoseReplies, KillRestart}

// Config says what Run starts and for how long. The zero value of each field
// but Drivers means its default.
type Config struct {
	// Drivers are the registered names of the drivers the contenders use,
	// e.g. "goredis", "redigo", "rueidis", "valkeygo"; import their packages. Required.
	Drivers []string
	// Nodes is how many redis-server processes to start (default 5).
	Nodes int
	// ClusterNodes is how many of the Nodes are each a Redis Cluster of
	// ClusterShards shards (default 2) instead of one server, with a fault
	// proxy in front of every shard (announced with cluster-announce-port,
	// so that clients reach the shard through it); a fault hits every shard
	// of the node at once. Only drivers with a cluster client can open them.
	ClusterNodes  int
	ClusterShards int
	// Contenders is how many clients compete through each driver (default 2).
	Contenders int
	// Duration is how long the contenders compete (default 5s).
	Duration time.Duration
	// TTL is the locks' time to live (default 1s). Short TTLs keep the
	// delayed restarts, which last longer than the TTL, short.
	TTL time.Duration
	// NodeTimeout bounds each call to one node (default 200ms: TTL/5, more
	// than the library's TTL/10, so that a race-enabled build on a busy
	// machine does not mistake slowness for faults too often).
	NodeTimeout time.Duration
	// Hold is the longest a holder keeps the lock before it unlocks
	// (default TTL/20); each holder picks a random time up to it, and some
	// extend the lock once and hold as long again.
	Hold time.Duration
	// FaultEvery is the mean time between the starts of two faults
	// (default 100ms).
	FaultEvery time.Duration
	// FaultFor is the longest a fault lasts (default TTL/2); each lasts a
	// random time from FaultFor/10 to FaultFor, except that a killed node
	// stays down for the TTL plus such a time.
	FaultFor time.Duration
	// Faults are the kinds of fault to apply (default AllFaults). Run cycles
	// through them in a random order, so that each is applied as often as
	// the others.
	Faults []Fault
	// Seed seeds the random choices; 0 picks one, which the Report shows.
	Seed uint64
	// Key is the lock's name (default "chaos").
	Key string
	// Logf, if set, is called for every fault applied and healed.
	Logf func(format string, args ...any)
	// Progress, if set, receives a line every ProgressEvery while the
	// contenders compete: the time they have run, and the grants, faults
	// and overlaps so far.
	Progress io.Writer
	// ProgressEvery is how often Progress gets a line (default 5s).
	ProgressEvery time.Duration
}

// withDefaults returns c with its defaults filled in, or an error naming a bad
// field.
func (c Config) withDefaults() (Config, error) {
	if c.Nodes == 0 {
		c.Nodes = 5
	}
	if c.Contenders == 0 {
		c.Contenders = 2
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = 200 * time.Millisecond
	}
	if c.Hold == 0 {
		c.Hold = c.TTL / 20
	}
	if c.FaultEvery == 0 {
		c.FaultEvery = 100 * time.Millisecond
	}
	if c.FaultFor == 0 {
		c.FaultFor = c.TTL / 2
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 5 * time.Second
	}
	if c.Faults == nil {
		c.Faults = AllFaults
	}
	if c.Key == "" {
		c.Key = "chaos"
	}
	if c.ClusterNodes > 0 && c.ClusterShards == 0 {
		c.ClusterShards = 2
	}
	switch {
	case c.ClusterNodes < 0 || c.ClusterNodes > c.Nodes || c.ClusterShards < 0:
		return c, fmt.Errorf("chaos: %d cluster nodes of %d shards among %d nodes", c.ClusterNodes, c.ClusterShards, c.Nodes)
	case len(c.Drivers) == 0:
		return c, errors.New("chaos: no drivers")
	case c.Nodes < 3:
		return c, fmt.Errorf("chaos: %d nodes: at least 3 are needed for a fault to hit a minority", c.Nodes)
	case c.Contenders < 0 || c.Duration < 0 || c.TTL < 0 || c.NodeTimeout < 0 || c.Hold < 0 || c.FaultEvery < 0 || c.FaultFor < 0 || c.ProgressEvery < 0:
		return c, errors.New("chaos: negative count or duration")
	case c.NodeTimeout < redlock.MinNodeTimeout:
		return c, fmt.Errorf("chaos: node timeout %v is shorter than %v (redlock.MinNodeTimeout)", c.NodeTimeout, redlock.MinNodeTimeout)
	case c.NodeTimeout >= c.TTL:
		return c, fmt.Errorf("chaos: node timeout %v is not below the TTL %v", c.NodeTimeout, c.TTL)
	}
	for _, f := range c.Faults {
		if !slices.Contains(AllFaults, f) {
			return c, fmt.Errorf("chaos: unknown fault %q", f)
		}
	}
	return c, nil
}
