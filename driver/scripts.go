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
)

// ReleaseScript deletes KEYS[1] only if it holds ARGV[1] and returns 1 if it did,
// 0 otherwise. EvalRelease runs it.
var ReleaseScript = newScript(releaseSource)

// ExtendScript sets the time to live of KEYS[1] to ARGV[2] milliseconds only if
// it holds ARGV[1], and returns 1 if it did, 0 otherwise. Extend runs it.
var ExtendScript = newScript(extendSource)

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
