package driver_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
)

func TestFenceKey(t *testing.T) {
	for key, want := range map[string]string{
		"orders":       "{orders}:fence",
		"lock:orders":  "{lock:orders}:fence",
		"{user1}:lock": "{user1}:lock:fence", // its own hash tag: same slot
		"a}b":          "a}b:fence",          // cannot be wrapped
		"":             "{}:fence",
		"{}:empty-tag": "{}:empty-tag:fence",
		"open {brace":  "{open {brace}:fence",
	} {
		if got := driver.FenceKey(key); got != want {
			t.Errorf("FenceKey(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestReleaseChannel(t *testing.T) {
	if got := driver.ReleaseChannel("lock:a"); got != "redlock:released:lock:a" {
		t.Errorf(`ReleaseChannel("lock:a") = %q, want "redlock:released:lock:a"`, got)
	}
}

func TestScripts(t *testing.T) {
	for name, s := range map[string]driver.Script{
		"release":        driver.ReleaseScript(),
		"extend":         driver.ExtendScript(),
		"setnx_fence":    driver.SetNXFenceScript(),
		"raise_fence":    driver.RaiseFenceScript(),
		"release_notify": driver.ReleaseNotifyScript(),
	} {
		sum := sha1.Sum([]byte(s.Source()))
		if s.SHA1() != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA1() = %s, want the digest of Source()", name, s.SHA1())
		}
		if !strings.Contains(s.Source(), "redis.call") {
			t.Errorf("%s: Source() = %.40q, want a Lua script calling Redis", name, s.Source())
		}
	}
	if driver.ReleaseScript() == driver.ReleaseNotifyScript() {
		t.Error("ReleaseScript() == ReleaseNotifyScript(), want two scripts")
	}
}
