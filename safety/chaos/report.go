package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a Run saw.
type Report struct {
	// Config is the configuration that ran, defaults and Seed filled in.
	Config Config
	// Elapsed is how long the contenders competed.
	Elapsed time.Duration
	// Grants are every grant's interval, in the order they ended.
	Grants []Grant
	// Refused counts Lock calls that gave up without the lock (each after a
	// deadline of four TTLs, retrying meanwhile).
	Refused int
	// Extended counts successful extensions; ExtendLost, extensions that
	// found the lock lost.
	Extended, ExtendLost int
	// UnlockLost counts Unlock calls that found fewer than a quorum still
	// holding the lock (it had expired, or faults hid the nodes).
	UnlockLost int
	// UnexpectedCount counts errors that matched neither ErrNotObtained nor
	// ErrLockLost; Unexpected holds the first few.
	UnexpectedCount int
	Unexpected      []string
	// Faults counts the faults applied, by kind.
	Faults map[Fault]int
	// Overlaps are the pairs of grants that held at once. A safe run has
	// none.
	Overlaps []Overlap
}

// Safe reports whether no two grants overlapped.
func (r Report) Safe() bool { return len(r.Overlaps) == 0 }

// GrantsByDriver counts the grants by driver name.
func (r Report) GrantsByDriver() map[string]int {
	by := make(map[string]int)
	for _, g := range r.Grants {
		d, _, _ := strings.Cut(g.Holder, "/")
		by[d]++
	}
	return by
}

// FaultCount is the number of faults applied.
func (r Report) FaultCount() int {
	n := 0
	for _, c := range r.Faults {
		n += c
	}
	return n
}

// String prints the report: the setup, grants by driver, faults by kind and
// overlaps, each overlap on its own line.
func (r Report) String() string {
	c := r.Config
	var b strings.Builder
	clusters := ""
	if c.ClusterNodes > 0 {
		clusters = fmt.Sprintf(" (%d of them Redis Clusters of %d shards)", c.ClusterNodes, c.ClusterShards)
	}
	fmt.Fprintf(&b, "chaos: %d nodes%s, %d contenders per driver, %v (TTL %v, node timeout %v, seed %d)\n",
		c.Nodes, clusters, c.Contenders, r.Elapsed.Round(time.Millisecond), c.TTL, c.NodeTimeout, c.Seed)
	by := r.GrantsByDriver()
	fmt.Fprintf(&b, "grants: %d (", len(r.Grants))
	for i, d := range c.Drivers {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", d, by[d])
	}
	fmt.Fprintf(&b, "); Lock gave up %d times; extended %d, extension lost %d; unlock found lock lost %d; unexpected errors %d\n",
		r.Refused, r.Extended, r.ExtendLost, r.UnlockLost, r.UnexpectedCount)
	for _, e := range r.Unexpected {
		fmt.Fprintf(&b, "  unexpected: %s\n", e)
	}
	fmt.Fprintf(&b, "faults: %d (", r.FaultCount())
	kinds := make([]Fault, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Faults[k])
	}
	fmt.Fprintf(&b, ")\noverlaps: %d\n", len(r.Overlaps))
	for _, o := range r.Overlaps {
		fmt.Fprintf(&b, "  %s\n", o)
	}
	return b.String()
}
