package driver

import (
	"strconv"
	"strings"
	"sync"
)

// The names under which the library stores what a lock needs beside its key.
// The redlock package, the drivers and the redlock command all use these, so
// that each format is defined once.
//
// Both names are in the lock key's Redis Cluster hash slot, whatever the key's
// shape, so that one script can touch the key and them on a cluster: each
// carries as its hash tag the slot's tag, [SlotTag]([HashSlot](key)).

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// FenceKey names the fencing counter of the lock key (see [Fencer]):
// "redlock:fence:{T}", T being [SlotTag]([HashSlot](key)). There is one
// counter per hash slot, shared by every key of the slot, so that counters
// do not grow with the number of distinct keys; a key's tokens still rise,
// since every token drawn from the counter is above all earlier ones.
func FenceKey(key string) string { return "redlock:fence:{" + SlotTag(HashSlot(key)) + "}" }

// LegacyFenceKey names the per-key fencing counter of versions before
// [FenceKey] counted per slot: "{key}:fence", or "key:fence" when key
// contains "}". The fencing scripts read it beside FenceKey(key) and take the
// larger, so that tokens keep rising from where the old clients left them;
// they never write it (a counter per key would grow with the keys), so an
// old client that still runs beside new ones reads only its own counter and
// can repeat a token: every old client must stop before the first new one
// takes a fenced lock.
// On a Redis Cluster, where a script may only touch keys of one slot, a
// driver passes it only when [HashSlot] gives it the key's slot (see
// [FenceKeys]): clusters were never supported before, so they hold no
// other.
func LegacyFenceKey(key string) string {
	if strings.Contains(key, "}") {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// FenceKeys returns the keys of the fencing scripts after the lock key:
// fenceKey, then LegacyFenceKey(key) unless cluster is set and it lies in
// another hash slot than key. cluster says whether the node is a Redis
// Cluster, which refuses a script whose keys are in several slots.
func FenceKeys(key, fenceKey string, cluster bool) []string {
	legacy := LegacyFenceKey(key)
	if cluster && HashSlot(legacy) != HashSlot(key) {
		return []string{fenceKey}
	}
	return []string{fenceKey, legacy}
}

// ReleaseChannel is the pub/sub channel on which releases of key are
// published (see [Notifier]): "redlock:released:{T}" followed by the key, T
// being [SlotTag]([HashSlot](key)), so that the release script can publish
// it with SPUBLISH (sharded pub/sub) on a cluster.
func ReleaseChannel(key string) string {
	return "redlock:released:{" + SlotTag(HashSlot(key)) + "}" + key
}

// HashSlot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT
// does: CRC16 of the key's hash tag (the text between its first "{" and the
// first "}" after it, when not empty), else of the whole key, modulo
// [Slots].
func HashSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// SlotTag returns the tag of slot, a short string whose own hash slot is
// slot: the decimal form of the least non-negative integer that hashes to
// slot (at most six digits). "{"+SlotTag(s)+"}" makes any name land in slot
// s. It panics if slot is not in [0, Slots).
func SlotTag(slot int) string {
	slotTagsOnce.Do(fillSlotTags)
	return slotTags[slot]
}

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// fillSlotTags computes the table of SlotTag, in a few milliseconds.
func fillSlotTags() {
	slotTags = make([]string, Slots)
	for n, left := 0, Slots; left > 0; n++ {
		s := strconv.Itoa(n)
		if slot := crc16(s) % Slots; slotTags[slot] == "" {
			slotTags[slot] = s
			left--
		}
	}
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// of Redis Cluster's key hashing.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// IdentityOf returns a node's identity (see [Identifier]) from the replies
// of its server: info, the text of INFO (at least its server and cluster
// sections), and nodes, the text of CLUSTER NODES for a node that is a
// cluster, or the reply of CLUSTER MYID for a cluster-enabled server reached
// as one server, or "" for neither.
func IdentityOf(info, nodes string) []string {
	var ids []string
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok && id != "" {
			ids = append(ids, "run:"+id)
		}
	}
	for line := range strings.Lines(nodes) {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, "node:"+f[0])
		}
	}
	return ids
}
