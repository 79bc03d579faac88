package driver

import (
	"crypto/sha1"
	_ "embed" // for the Lua scripts
	"encoding/hex"
	"strconv"
	"time"
)

// Script is a Lua script every Redis driver sends, with its SHA1 digest for
// EVALSHA. Drivers send it with EVALSHA and fall back to EVAL on NOSCRIPT.
type Script struct {
	// Source is the Lua source, for EVAL and SCRIPT LOAD.
	Source string
	// SHA1 is the lowercase hex SHA1 digest of Source, for EVALSHA.
	SHA1 string
}

func newScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Source: src, SHA1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed release.lua
	releaseSource string
	//go:embed extend.lua
	extendSource string
	//go:embed setnx_fence.lua
	setNXFenceSource string
	//go:embed raise_fence.lua
	raiseFenceSource string
	//go:embed release_notify.lua
	releaseNotifySource string
)

// ReleaseScript deletes KEYS[1] only if it holds ARGV[1] and returns 1 if it did,
// 0 otherwise. EvalRelease runs it.
var ReleaseScript = newScript(releaseSource)

// ExtendScript sets the time to live of KEYS[1] to ARGV[2] milliseconds only if
// it holds ARGV[1], and returns 1 if it did, 0 otherwise. Extend runs it.
var ExtendScript = newScript(extendSource)

// SetNXFenceScript sets KEYS[1] to ARGV[1] with NX and PX ARGV[2] and reads
// the fencing counter KEYS[2] in the same step. It returns {1, counter} if the
// key was set and {0, counter} if not, the counter as a decimal string ("0"
// when absent). Fencer.SetNXFence runs it.
var SetNXFenceScript = newScript(setNXFenceSource)

// RaiseFenceScript raises the fencing counter KEYS[2] to ARGV[2] (a decimal
// string; it never lowers it) if KEYS[1] holds ARGV[1], and returns 1 if it
// did hold it, 0 otherwise. Fencer.RaiseFence runs it.
var RaiseFenceScript = newScript(raiseFenceSource)

// ReleaseNotifyScript is ReleaseScript that also publishes an empty message on
// ReleaseChannel(KEYS[1]) when it deleted the key; it builds the channel's
// name itself, so a driver passes the same KEYS and ARGV as to ReleaseScript.
// Notifier.ReleaseNotify runs it.
var ReleaseNotifyScript = newScript(releaseNotifySource)

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
// which drivers pass a TTL to a script or to PX.
func MillisecondsString(ttl time.Duration) string {
	return strconv.FormatInt(Milliseconds(ttl), 10)
}
