package driver

import "strings"

// The names under which the library stores what a lock needs beside its key.
// The redlock package, the drivers and the redlock command all use these, so
// that each format is defined once.

// FenceKey names the fencing counter of the lock key (see [Fencer]):
// "{key}:fence", or "key:fence" when key has a hash tag of its own, so that
// both are in the same Redis Cluster hash slot (a key's slot is that of its
// first non-empty {...} section, else of the whole key). A key without a hash
// tag that contains "}" cannot be wrapped that way; its counter is
// "key:fence", in another slot.
func FenceKey(key string) string {
	if strings.Contains(key, "}") {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// ReleaseChannel is the pub/sub channel on which releases of key are
// published (see [Notifier]): "redlock:released:" followed by the key.
func ReleaseChannel(key string) string { return "redlock:released:" + key }
