package driver

import (
	"crypto/sha1"
	_ "embed" // for the Lua scripts
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"
)

// Script is a Lua script every Redis driver sends. Drivers send it with
// EVALSHA and fall back to EVAL when the server answers NOSCRIPT. A Script is
// a value that cannot be changed: the scripts of this package are the same for
// every user of the module.
type Script struct {
	source, sha1 string
}

// Source returns the Lua source, for EVAL and SCRIPT LOAD.
func (s Script) Source() string { return s.source }

// SHA1 returns the lowercase hex SHA1 digest of Source, for EVALSHA.
func (s Script) SHA1() string { return s.sha1 }

func newScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{source: src, sha1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed release.lua
	releaseSource string
	//go:embed extend.lua
	extendSource string
	//go:embed fence_counters.lua
	fenceCountersSource string
	//go:embed setnx_fence.lua
	setNXFenceSource string
	//go:embed raise_fence.lua
	raiseFenceSource string
	//go:embed release_notify.lua
	releaseNotifySource string
	//go:embed pttl.lua
	ttlSource string
	//go:embed setnx_again.lua
	setNXAgainSource string

	releaseScript       = newScript(releaseSource)
	extendScript        = newScript(extendSource)
	setNXFenceScript    = newScript(fenceCountersSource + setNXFenceSource)
	raiseFenceScript    = newScript(fenceCountersSource + raiseFenceSource)
	releaseNotifyScript = newScript(releaseNotifySource)
	ttlScript           = newScript(ttlSource)
	setNXAgainScript    = newScript(fenceCountersSource + setNXAgainSource)
)

// ReleaseScript deletes KEYS[1] only if it holds ARGV[1] and returns 1 if it did,
// 0 otherwise. EvalRelease runs it.
func ReleaseScript() Script { return releaseScript }

// ExtendScript sets the time to live of KEYS[1] to ARGV[2] milliseconds only if
// it holds ARGV[1], and returns 1 if it did, 0 otherwise. Extend runs it.
func ExtendScript() Script { return extendScript }

// SetNXFenceScript sets KEYS[1] to ARGV[1] with NX and PX ARGV[2] and reads
// the fencing counter KEYS[2] in the same step, and the counters named by
// ARGV[3] and on (the old ones: see [OldFenceKeys]) as far as it may, taking
// the largest. It returns {1, counter}
// if the key was set and {0, counter} if not, the counter as a decimal string
// ("0" when absent). A counter KEYS[2] that holds anything but a decimal
// number of 64 bits fails it before it writes anything, with the error reply
// "ERR fencing counter holds no number: " and the counter's name, which
// [PermanentCode] takes for one retrying cannot fix. Fencer.SetNXFence runs
// it.
func SetNXFenceScript() Script { return setNXFenceScript }

// RaiseFenceScript raises the fencing counter KEYS[2] to ARGV[2] (a decimal
// string; it never lowers it) if KEYS[1] holds ARGV[1], and returns 1 if it
// did hold it, 0 otherwise. A counter that holds no number fails it as it
// fails SetNXFenceScript. Fencer.RaiseFence runs it.
func RaiseFenceScript() Script { return raiseFenceScript }

// ReleaseNotifyScript is ReleaseScript that also publishes an empty message on
// the channel ARGV[2] with SPUBLISH (sharded pub/sub, Redis 7.0) when it
// deleted the key. A driver passes the same KEYS and ARGV as to
// ReleaseScript, and ReleaseChannel(KEYS[1]) as ARGV[2]. A failed
// publication (a server without SPUBLISH, an ACL that refuses it) does not
// fail the script: the release is done, and waiters poll.
// Notifier.ReleaseNotify runs it.
func ReleaseNotifyScript() Script { return releaseNotifyScript }

// TTLScript returns the remaining time to live of KEYS[1] in milliseconds
// (PTTL) if it holds ARGV[1], and -2 otherwise, as PTTL does for a missing
// key. TTLer.TTL runs it.
func TTLScript() Script { return ttlScript }

// SetNXAgainScript is a SET NX, plain or fenced, sent again after its first
// send failed because the server closed or reset the connection before any
// reply (a restart, CLIENT KILL, the server's idle timeout), so that the
// first may have run: it sets KEYS[1] to ARGV[1] with NX and PX ARGV[2], and
// a key that already holds ARGV[1] (the first send set it: the value is
// unique to the acquisition) counts as set, its time to live left as the
// first send set it. KEYS[2] and ARGV[3] and on, when given, are read as
// SetNXFenceScript reads them. It returns {1, counter} if the key holds
// ARGV[1] and {0, counter} if not, the counter "0" without KEYS[2]. The
// Redis drivers of this module send it (see SAFETY.md, "Connections the
// server closed"); a driver that never sends a SET NX twice has no use for it.
func SetNXAgainScript() Script { return setNXAgainScript }

// Milliseconds converts a TTL to the whole milliseconds Redis expects, rounding
// up so that a positive TTL never becomes zero.
func Milliseconds(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// MillisecondsString is Milliseconds formatted as a decimal string, the form in
// which drivers pass a TTL to a script or to PX. The strings of the TTLs used
// last are kept (see msStrings): a Client's SETs and extensions use the same
// few TTLs, each formatted once rather than once per command.
func MillisecondsString(ttl time.Duration) string {
	ms := Milliseconds(ttl)
	slot := &msStrings[uint64(ms)%uint64(len(msStrings))]
	if p := slot.Load(); p != nil && p.ms == ms {
		return p.s
	}
	p := &msString{ms: ms, s: strconv.FormatInt(ms, 10)}
	slot.Store(p)
	return p.s
}

// msString is a number of milliseconds and its decimal form.
type msString struct {
	ms int64
	s  string
}

// msStrings keeps the decimal form of the milliseconds MillisecondsString
// formatted last, one per slot, by value modulo the slots: a hit costs an
// atomic load, a miss one allocation more than formatting alone.
var msStrings [8]atomic.Pointer[msString]
