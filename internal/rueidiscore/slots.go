package rueidiscore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// slotMap is a cluster's map of slots to the addresses of their primaries,
// read with CLUSTER SLOTS when a client is created (see warm), or on first
// use after reset.
type slotMap struct {
	// mu guards what follows; it is never held during a read, so that
	// knownPrimaries (Identity) and an owner whose context ends do not
	// wait for one.
	mu sync.Mutex
	// reading holds one token while an owner reads the map: reads are
	// made one at a time, and the owners that find a read under way wait
	// for it as long as their contexts let them. Made on first use.
	reading chan struct{}
	ranges  []slotRange // nil until read
	// gen counts the changes of the map (set, reset): a read that began
	// before one is not kept.
	gen uint64
	// primaries are the primaries of the last map read, kept across
	// reset: cluster-wide questions go to them first (see ask).
	primaries map[string]bool
}

type slotRange struct {
	lo, hi int
	addr   string // host:port of the primary
}

// owner returns the address of the primary that serves slot, reading the
// map with read if need be, after the read under way, if any; ctx bounds
// both waits.
func (m *slotMap) owner(ctx context.Context, slot int, read func(ctx context.Context, primaries map[string]bool) ([]slotRange, error)) (string, error) {
	m.mu.Lock()
	ranges := m.ranges
	if ranges == nil && m.reading == nil {
		m.reading = make(chan struct{}, 1)
	}
	reading := m.reading
	m.mu.Unlock()
	if ranges != nil {
		return ownerIn(ranges, slot)
	}
	select {
	case reading <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-reading }()
	m.mu.Lock()
	ranges, gen, primaries := m.ranges, m.gen, m.primaries
	m.mu.Unlock()
	if ranges == nil { // not read by the read that came first
		var err error
		if ranges, err = read(ctx, primaries); err != nil {
			return "", err
		}
		m.mu.Lock()
		if m.gen == gen { // else the map changed during the read: the next owner reads it again
			m.setLocked(ranges)
		}
		m.mu.Unlock()
	}
	return ownerIn(ranges, slot)
}

// ownerIn returns the address of the primary that serves slot in ranges.
func ownerIn(ranges []slotRange, slot int) (string, error) {
	for _, r := range ranges {
		if r.lo <= slot && slot <= r.hi {
			return r.addr, nil
		}
	}
	return "", fmt.Errorf("no shard serves slot %d", slot)
}

// known returns the address of the primary that serves slot in the map read
// last, and false if the map is not known (never read, or reset since).
func (m *slotMap) known(slot int) (string, bool) {
	m.mu.Lock()
	ranges := m.ranges
	m.mu.Unlock()
	addr, err := ownerIn(ranges, slot)
	return addr, err == nil
}

// set replaces the map with ranges, read from the cluster.
func (m *slotMap) set(ranges []slotRange) {
	m.mu.Lock()
	m.setLocked(ranges)
	m.mu.Unlock()
}

func (m *slotMap) setLocked(ranges []slotRange) {
	m.gen++
	m.ranges = ranges
	m.primaries = make(map[string]bool, len(ranges))
	for _, r := range ranges {
		m.primaries[r.addr] = true
	}
}

// knownPrimaries returns the primaries of the last map read (nil before
// the first). The map returned is never changed: set makes a new one.
func (m *slotMap) knownPrimaries() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.primaries
}

// reset forgets the map, which the next owner reads again (also when a read
// is under way: its map is not kept).
func (m *slotMap) reset(context.Context) {
	m.mu.Lock()
	m.gen++
	m.ranges = nil
	m.mu.Unlock()
}

// parseSlots reads the reply of CLUSTER SLOTS: for each range, its first
// and last slot and then its primary's host and port (and ID), then its
// replicas'. A primary whose host is empty or "?" (the server does not know
// its own endpoint) is on the host of from, the node that answered.
func parseSlots(reply any, from string) ([]slotRange, error) {
	all, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected reply of type %T", reply)
	}
	ranges := make([]slotRange, 0, len(all))
	for _, e := range all {
		f, ok := e.([]any)
		if !ok || len(f) < 3 {
			return nil, errors.New("unexpected range")
		}
		lo, ok1 := f[0].(int64)
		hi, ok2 := f[1].(int64)
		primary, ok3 := f[2].([]any)
		if !ok1 || !ok2 || !ok3 || len(primary) < 2 {
			return nil, errors.New("unexpected range")
		}
		host, ok1 := primary[0].(string)
		port, ok2 := primary[1].(int64)
		if !ok1 || !ok2 {
			return nil, errors.New("unexpected primary")
		}
		if host == "" || host == "?" {
			host, _, _ = net.SplitHostPort(from)
		}
		ranges = append(ranges, slotRange{lo: int(lo), hi: int(hi), addr: net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	return ranges, nil
}
