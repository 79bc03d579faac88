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
		got, err := keystatus.Read(t.Context(), c, tc.key, false)
		if err != nil || got != tc.want {
			t.Errorf("Read(%s) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
	got, err := keystatus.Read(t.Context(), c, "held", false)
	if err != nil || !got.Held || got.TTL <= 0 || got.TTL > 30*time.Second || got.Fence != 41 || !got.FenceSet {
		t.Errorf("Read(held) = %+v, %v; want held with a TTL in (0, 30s] and fence 41", got, err)
	}
	if _, err := keystatus.Read(t.Context(), c, "garbled", false); err == nil {
		t.Error("Read of a key whose fencing counter is not a number: no error")
	}
	srv.Kill()
	if _, err := keystatus.Read(t.Context(), c, "held", false); err == nil {
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
		got, err := keystatus.Read(t.Context(), client(t, addr), "k", false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read through %s = %+v, %v; want an error with %q", addr, got, err, want)
		}
	}
}

// Read reads the per-key counter of earlier versions where the acquiring
// script does (driver.FenceKeys), and Counter gives the larger of the two:
// the counter the next fenced grant draws its token from.
func TestReadLegacyCounter(t *testing.T) {
	srv := redistest.NewServer(t)
	setUp(t, srv,
		[]string{"SET", driver.LegacyFenceKey("old"), "41"},
		[]string{"SET", driver.FenceKey("both"), "7"},
		[]string{"SET", driver.LegacyFenceKey("both"), "5"},
		[]string{"SET", driver.LegacyFenceKey("a}b"), "9"}, // "a}b:fence": another slot than "a}b"
		[]string{"SET", driver.LegacyFenceKey("garbled"), "nine"},
		[]string{"SET", driver.LegacyFenceKey("nop"), "3"},
		[]string{"ACL", "SETUSER", "reader", "on", ">pw", "~nop", "~redlock:fence:*", "+pttl", "+get"})
	c := client(t, srv.Addr())
	for _, tc := range []struct {
		key     string
		cluster bool
		want    keystatus.Key
		counter uint64
	}{
		{"old", false, keystatus.Key{Legacy: 41, LegacySet: true}, 41},
		{"both", false, keystatus.Key{Fence: 7, FenceSet: true, Legacy: 5, LegacySet: true}, 7},
		{"a}b", false, keystatus.Key{Legacy: 9, LegacySet: true}, 9},
		{"a}b", true, keystatus.Key{}, 0},                             // a cluster refuses a script over two slots: not read there
		{"old", true, keystatus.Key{Legacy: 41, LegacySet: true}, 41}, // "{old}:fence" is in the slot of "old"
	} {
		got, err := keystatus.Read(t.Context(), c, tc.key, tc.cluster)
		if err != nil || got != tc.want {
			t.Errorf("Read(%s, cluster %v) = %+v, %v; want %+v", tc.key, tc.cluster, got, err, tc.want)
		}
		if n, ok := got.Counter(); n != tc.counter || ok != (tc.want.FenceSet || tc.want.LegacySet) {
			t.Errorf("Read(%s, cluster %v).Counter() = %d, %v; want %d", tc.key, tc.cluster, n, ok, tc.counter)
		}
	}
	if _, err := keystatus.Read(t.Context(), c, "garbled", false); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("Read of a key whose per-key counter is not a number: %v, want an error", err)
	}
	// A user that may not read the per-key counter (no fenced lock can be
	// taken under it either) gets the rest.
	got, err := keystatus.Read(t.Context(), client(t, "redis://reader:pw@"+srv.Addr()), "nop", false)
	if err != nil || got != (keystatus.Key{}) {
		t.Errorf("Read(nop) as a user that may not read {nop}:fence = %+v, %v; want nothing, no error", got, err)
	}
}
