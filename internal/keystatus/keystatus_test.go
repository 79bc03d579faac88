package keystatus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
)

// setUp runs each command on srv, as the test's setup.
func setUp(t *testing.T, srv *redistest.Server, cmds ...[]string) {
	t.Helper()
	for _, args := range cmds {
		if _, err := srv.Do(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// client returns the client of "redlock status" for addr, closed at the
// test's end.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	a, err := redisaddr.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := keystatus.NewClient(a, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRead(t *testing.T) {
	srv := redistest.NewServer(t)
	setUp(t, srv,
		[]string{"SET", "held", "secret", "PX", "30000"},
		[]string{"SET", driver.FenceKey("held"), "41"},
		[]string{"SET", "forever", "x"},
		[]string{"SET", driver.FenceKey("released"), "7"},
		[]string{"SET", driver.FenceKey("garbled"), "seven"})
	c := client(t, srv.Addr())
	for _, tc := range []struct {
		key  string
		want keystatus.Key
	}{
		{"free", keystatus.Key{}},
		{"forever", keystatus.Key{Held: true, TTL: keystatus.NoExpiry}},
		{"released", keystatus.Key{Fence: 7, FenceSet: true}},
	} {
		got, err := keystatus.Read(t.Context(), c, "", tc.key)
		if err != nil || got != tc.want {
			t.Errorf("Read(%s) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
	got, err := keystatus.Read(t.Context(), c, "", "held")
	if err != nil || !got.Held || got.TTL <= 0 || got.TTL > 30*time.Second || got.Fence != 41 || !got.FenceSet {
		t.Errorf("Read(held) = %+v, %v; want held with a TTL in (0, 30s] and fence 41", got, err)
	}
	if got, err := keystatus.Read(t.Context(), c, "", "garbled"); err != nil || got.FenceErr == nil {
		t.Errorf("Read of a key whose fencing counter is not a number = %+v, %v: no FenceErr", got, err)
	}
	srv.Kill()
	if _, err := keystatus.Read(t.Context(), c, "", "held"); err == nil {
		t.Error("Read from a killed server: no error")
	}
}

// A connection the server refuses at its handshake (a wrong password, a
// database out of range) is an error of Read, not a free key with a garbled
// fencing counter.
func TestReadRefusedConnection(t *testing.T) {
	srv := redistest.NewServer(t, redistest.WithPassword("pw"))
	for addr, want := range map[string]string{
		"redis://:wrong@" + srv.Addr():      "WRONGPASS",
		"redis://:pw@" + srv.Addr() + "/99": "DB index is out of range",
	} {
		got, err := keystatus.Read(t.Context(), client(t, addr), "", "k")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read through %s = %+v, %v; want an error with %q", addr, got, err, want)
		}
	}
}

// Read reads the old counters where the acquiring script does
// (driver.OldFenceKeys), as it does (one that is not a number, or that the
// user may not read, is none), and Counter gives the largest: the counter
// the next fenced grant draws its token from.
func TestReadOldCounters(t *testing.T) {
	srv := redistest.NewServer(t)
	setUp(t, srv,
		[]string{"SET", driver.LegacyFenceKey("old"), "41"},
		[]string{"SET", driver.FenceKey("both"), "7"},
		[]string{"SET", driver.LegacyFenceKey("both"), "5"},
		[]string{"SET", driver.LegacyFenceKey("a}b"), "9"}, // "a}b:fence": another slot than "a}b"
		[]string{"SET", driver.LegacyFenceKey("garbled"), "nine"},
		[]string{"SET", driver.LegacyFenceKey("p:nop"), "3"},
		[]string{"SET", driver.FenceKey("p:nop"), "4"},
		[]string{"SET", driver.PrefixFenceKey("p:", "p:nop"), "2"},
		[]string{"SET", driver.FenceKey("p:all"), "12"},
		[]string{"SET", driver.LegacyFenceKey("p:all"), "11"},
		[]string{"SET", driver.PrefixFenceKey("p:", "p:all"), "10"},
		[]string{"SET", driver.FenceKey("p:new"), "30"},
		[]string{"SET", driver.PrefixFenceKey("p:", "p:new"), "31"},
		[]string{"ACL", "SETUSER", "reader", "on", ">pw", "~p:*", "+pttl", "+get"})
	c := client(t, srv.Addr())
	for _, tc := range []struct {
		prefix, key string
		want        keystatus.Key
		counter     uint64
	}{
		{"", "old", keystatus.Key{Legacy: 41, LegacySet: true}, 41},
		{"", "both", keystatus.Key{Fence: 7, FenceSet: true, Legacy: 5, LegacySet: true}, 7},
		{"", "a}b", keystatus.Key{Legacy: 9, LegacySet: true}, 9},
		{"", "garbled", keystatus.Key{}, 0}, // as the script: not a number is none
		{"p:", "p:all", keystatus.Key{Fence: 10, FenceSet: true, Shared: 12, SharedSet: true, Legacy: 11, LegacySet: true}, 12},
		{"p:", "p:new", keystatus.Key{Fence: 31, FenceSet: true, Shared: 30, SharedSet: true}, 31},
		{"p:", "p:nop", keystatus.Key{Fence: 2, FenceSet: true, Shared: 4, SharedSet: true, Legacy: 3, LegacySet: true}, 4},
		{"", "p:all", keystatus.Key{Fence: 12, FenceSet: true, Legacy: 11, LegacySet: true}, 12}, // without the prefix: the shared counter is the one in use
	} {
		got, err := keystatus.Read(t.Context(), c, tc.prefix, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("Read(%q, %q) = %+v, %v; want %+v", tc.prefix, tc.key, got, err, tc.want)
		}
		if n, ok := got.Counter(); n != tc.counter || ok != (tc.want.FenceSet || tc.want.SharedSet || tc.want.LegacySet) {
			t.Errorf("Read(%q, %q).Counter() = %d, %v; want %d", tc.prefix, tc.key, n, ok, tc.counter)
		}
	}
	// A user that may read only the prefix's keys gets the counter in
	// use, and the old ones count as none, as in the script.
	got, err := keystatus.Read(t.Context(), client(t, "redis://reader:pw@"+srv.Addr()), "p:", "p:nop")
	if want := (keystatus.Key{Fence: 2, FenceSet: true}); err != nil || got != want {
		t.Errorf("Read(p:nop) as a user that may read only p:* = %+v, %v; want %+v, no error", got, err, want)
	}
}

// A counter in use that the node refuses to read (NOPERM), or that holds no
// number (a string that is not one, a key of another type: WRONGTYPE), is
// Key.FenceErr beside what the node says of the key, not Read's error: the
// key's state is known. Counter then says nothing.
func TestReadCounterUnreadable(t *testing.T) {
	srv := redistest.NewServer(t)
	setUp(t, srv,
		[]string{"ACL", "SETUSER", "apponly", "on", ">pw", "~app:*", "&*", "+@all"},
		[]string{"SET", "app:k", "secret", "PX", "30000"},
		[]string{"SET", driver.FenceKey("app:k"), "41"},
		[]string{"SET", "app:g", "secret", "PX", "30000"},
		[]string{"SET", driver.FenceKey("app:g"), "seven"},
		[]string{"SET", "app:h", "secret", "PX", "30000"},
		[]string{"HSET", driver.FenceKey("app:h"), "f", "1"})
	for _, tc := range []struct{ addr, key, want string }{
		{"redis://apponly:pw@" + srv.Addr(), "app:k", "NOPERM"},
		{srv.Addr(), "app:g", "not a number"},
		{srv.Addr(), "app:h", "WRONGTYPE"},
	} {
		got, err := keystatus.Read(t.Context(), client(t, tc.addr), "", tc.key)
		if err != nil || !got.Held || got.TTL <= 0 || got.FenceSet || got.FenceErr == nil || !strings.Contains(got.FenceErr.Error(), tc.want) {
			t.Errorf("Read(%s) through %s = %+v, %v; want held with a TTL, FenceErr with %q, no error", tc.key, tc.addr, got, err, tc.want)
		}
		if n, ok := got.Counter(); ok {
			t.Errorf("Read(%s).Counter() = %d, true; want none: the counter in use is unknown", tc.key, n)
		}
	}
}
