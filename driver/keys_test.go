package driver_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
)

func TestLegacyFenceKey(t *testing.T) {
	for key, want := range map[string]string{
		"orders":       "{orders}:fence",
		"lock:orders":  "{lock:orders}:fence",
		"{user1}:lock": "{user1}:lock:fence",
		"a}b":          "a}b:fence",
		"":             "{}:fence",
		"{}:empty-tag": "{}:empty-tag:fence",
		"open {brace":  "{open {brace}:fence",
	} {
		if got := driver.LegacyFenceKey(key); got != want {
			t.Errorf("LegacyFenceKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// keyShapes are lock keys of every shape a hash tag can take.
var keyShapes = []string{
	"orders", "lock:orders", "{user1}:lock", "a}b", "lock:a}b", "", "{}:empty-tag",
	"open {brace", "}{", "{a}{b}", "x{}y{z}", "\xff\x00", "lock:日本",
}

func TestNamesShareTheKeySlot(t *testing.T) {
	for _, key := range keyShapes {
		slot := driver.HashSlot(key)
		if fk := driver.FenceKey(key); driver.HashSlot(fk) != slot {
			t.Errorf("FenceKey(%q) = %q in slot %d, want the key's slot %d", key, fk, driver.HashSlot(fk), slot)
		}
		if ch := driver.ReleaseChannel(key); driver.HashSlot(ch) != slot {
			t.Errorf("ReleaseChannel(%q) = %q in slot %d, want the key's slot %d", key, ch, driver.HashSlot(ch), slot)
		}
		if ch := driver.ReleaseChannel(key); !strings.HasSuffix(ch, key) || !strings.HasPrefix(ch, "redlock:released:{") {
			t.Errorf("ReleaseChannel(%q) = %q, want redlock:released:{tag} then the key", key, ch)
		}
	}
}

// prefixShapes are key prefixes of every shape a hash tag can take, the
// empty one included.
var prefixShapes = []string{"", "lock:", "{app}:", "a{}", "a{", "}", "{}", "x{y}z{", "日本:"}

// A prefix's counter is in its key's slot, under the prefix wherever that
// keeps it in the slot, and is the same for every key of a slot and prefix.
func TestPrefixFenceKey(t *testing.T) {
	underPrefix := 0
	for _, prefix := range prefixShapes {
		for _, name := range keyShapes {
			key := prefix + name
			fk := driver.PrefixFenceKey(prefix, key)
			if driver.HashSlot(fk) != driver.HashSlot(key) {
				t.Errorf("PrefixFenceKey(%q, %q) = %q in slot %d, want the key's slot %d", prefix, key, fk, driver.HashSlot(fk), driver.HashSlot(key))
			}
			switch {
			case prefix == "" && fk != driver.FenceKey(key):
				t.Errorf("PrefixFenceKey(\"\", %q) = %q, want FenceKey's %q", key, fk, driver.FenceKey(key))
			case prefix != "" && fk == prefix+driver.FenceKey(key):
				underPrefix++
			case prefix != "" && fk != driver.FenceKey(key):
				t.Errorf("PrefixFenceKey(%q, %q) = %q: neither under the prefix nor FenceKey", prefix, key, fk)
			case prefix != "" && !strings.Contains(prefix, "{"):
				t.Errorf("PrefixFenceKey(%q, %q) = %q, want it under the prefix: a prefix without '{' keeps the slot", prefix, key, fk)
			}
			if old := driver.OldFenceKeys(key, fk); fk == driver.FenceKey(key) {
				if !slices.Equal(old, []string{driver.LegacyFenceKey(key)}) {
					t.Errorf("OldFenceKeys(%q, %q) = %q, want only the per-key counter", key, fk, old)
				}
			} else if !slices.Equal(old, []string{driver.FenceKey(key), driver.LegacyFenceKey(key)}) {
				t.Errorf("OldFenceKeys(%q, %q) = %q, want the shared counter and the per-key one", key, fk, old)
			}
		}
	}
	if underPrefix == 0 {
		t.Error("no counter under its prefix")
	}
	if a, b := driver.PrefixFenceKey("lock:", "lock:{u}a"), driver.PrefixFenceKey("lock:", "lock:{u}b"); a != b || a != "lock:"+driver.FenceKey("{u}") {
		t.Errorf("two keys of one slot and prefix have counters %q and %q, want one, lock:+FenceKey", a, b)
	}
	if driver.PrefixFenceKey("a:", "a:k") == driver.PrefixFenceKey("b:", "b:k") {
		t.Error("two prefixes share a counter")
	}
}

func TestFenceKeyPerSlot(t *testing.T) {
	// Known values: CLUSTER KEYSLOT gives these slots.
	for key, slot := range map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "": 0} {
		if got := driver.HashSlot(key); got != slot {
			t.Errorf("HashSlot(%q) = %d, want %d", key, got, slot)
		}
	}
	if got := driver.FenceKey("foo"); got != "redlock:fence:{"+driver.SlotTag(12182)+"}" {
		t.Errorf("FenceKey(foo) = %q, want the counter of slot 12182", got)
	}
	// Two keys of one slot share a counter; the number of counters is
	// bounded by the number of slots, whatever the number of keys.
	if driver.FenceKey("{u}a") != driver.FenceKey("{u}b") {
		t.Error("FenceKey differs for two keys of one slot")
	}
	counters := make(map[string]bool)
	for i := range 100000 {
		counters[driver.FenceKey(fmt.Sprint("lock:job:", i))] = true
	}
	if len(counters) > driver.Slots {
		t.Errorf("100000 keys have %d counters, want at most %d", len(counters), driver.Slots)
	}
}

func TestSlotTag(t *testing.T) {
	seen := make(map[string]bool, driver.Slots)
	for slot := range driver.Slots {
		tag := driver.SlotTag(slot)
		if driver.HashSlot(tag) != slot || len(tag) == 0 || len(tag) > 6 || seen[tag] {
			t.Fatalf("SlotTag(%d) = %q (slot %d), want a new short tag of that slot", slot, tag, driver.HashSlot(tag))
		}
		seen[tag] = true
	}
	// The table is a storage format: pin a few values.
	for slot, tag := range map[int]string{driver.HashSlot("0"): "0", driver.HashSlot("7"): "7"} {
		if got := driver.SlotTag(slot); got != tag {
			t.Errorf("SlotTag(%d) = %q, want %q", slot, got, tag)
		}
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
