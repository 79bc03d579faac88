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
// The fencing counter and the release channel are in the lock key's Redis
// Cluster hash slot, whatever the key's shape, so that one script can touch
// the key and them on a cluster: each carries as its hash tag the slot's tag,
// [SlotTag]([HashSlot](key)).

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// FenceKey names the fencing counter of the lock key (see [Fencer]) of a
// Client without a key prefix: "redlock:fence:{T}", T being
// [SlotTag]([HashSlot](key)). There is one counter per hash slot, shared by
// every key of the slot, so that counters do not grow with the number of
// distinct keys; a key's tokens still rise, since every token drawn from the
// counter is above all earlier ones. A Client with a key prefix keeps its
// counters under the prefix: see [PrefixFenceKey].
func FenceKey(key string) string { return slotFenceKey(HashSlot(key)) }

// slotFenceKey is FenceKey of the keys of slot.
func slotFenceKey(slot int) string { return "redlock:fence:{" + SlotTag(slot) + "}" }

// PrefixFenceKey names the fencing counter of key, the key on the nodes
// (prefix included), for a Client whose key prefix is prefix:
// prefix+[FenceKey](key), in the prefix's namespace, so that an ACL rule on
// the prefix covers it and Clients of other prefixes neither read nor write
// it. It is FenceKey(key) when prefix is "", and also when prefix+FenceKey(key)
// would lie in another hash slot than key, which a "{" in the prefix without
// a hash tag of its own can cause (such as "a{}" or "a{"): a script on a
// Redis Cluster may only touch keys of one slot. Every Client derives the
// same name from the same prefix and key; Clients of two prefixes that name
// one key on the nodes (prefix "lock:" and key "lock:x", prefix "" and the
// same key) derive two names, so that the tokens of the one need not rise
// above those of the other.
func PrefixFenceKey(prefix, key string) string {
	slot := HashSlot(key)
	fk := slotFenceKey(slot)
	switch {
	case prefix == "":
		return fk
	case !strings.Contains(prefix, "{"):
		// The name's hash tag is then fk's, whose slot is key's.
		return prefix + fk
	}
	if pk := prefix + fk; HashSlot(pk) == slot {
		return pk
	}
	return fk
}

// LegacyFenceKey names the per-key fencing counter of versions before
// [FenceKey] counted per slot: "{key}:fence", or "key:fence" when key
// contains "}". It is one of [OldFenceKeys].
func LegacyFenceKey(key string) string {
	if strings.Contains(key, "}") {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// OldFenceKeys returns the fencing counters of key that earlier versions
// kept, which the fencing scripts read beside fenceKey, the counter in use,
// taking the largest, so that tokens keep rising from where older clients
// left them: FenceKey(key) when fenceKey is another name (the counter shared
// by every prefix, which Clients with a key prefix used before
// [PrefixFenceKey]), then [LegacyFenceKey](key). The scripts never write
// them, and read them as far as they can: a name the node's ACL user may not
// read, one in a hash slot that another node of a Redis Cluster serves, and
// one that does not hold a decimal number of 64 bits (a lock of that name,
// say) count as absent. So an old client that still runs beside new ones
// reads only its own counter and can repeat a token, and so can a new one
// whose user may not read the old counters: every old client must stop
// before the first new one takes a fenced lock, and the ACL user must be
// allowed to read the old counters (see the README's least-privilege rule)
// where old clients fenced.
func OldFenceKeys(key, fenceKey string) []string {
	if fk := FenceKey(key); fk != fenceKey {
		return []string{fk, LegacyFenceKey(key)}
	}
	return []string{LegacyFenceKey(key)}
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
// of Redis Cluster's key hashing, a byte at a time through crcTable rather
// than a bit at a time: every release computes it, for its channel
// (BenchmarkCRC16 compares the two).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// crcTable holds, for each byte b, the CRC-16/XMODEM of b alone: the bits
// that shifting b through the polynomial leaves.
var crcTable = func() (t [256]uint16) {
	for b := range t {
		t[b] = crcBits(uint16(b) << 8)
	}
	return t
}()

// crcBits shifts crc's high byte through the polynomial, a bit at a time.
func crcBits(crc uint16) uint16 {
	for range 8 {
		if crc&0x8000 != 0 {
			crc = crc<<1 ^ 0x1021
		} else {
			crc <<= 1
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
