package keystatus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
)

func TestRead(t *testing.T) {
	srv := redistest.NewServer(t)
	do := func(args ...string) {
		t.Helper()
		if _, err := srv.Do(t.Context(), args...); err != nil {
			t.Fatal(err)
		}
	}
	do("SET", "held", "secret", "PX", "30000")
	do("SET", driver.FenceKey("held"), "41")
	do("SET", "forever", "x")
	do("SET", driver.FenceKey("released"), "7")
	do("SET", driver.FenceKey("garbled"), "seven")

	a, err := redisaddr.Parse(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := keystatus.NewClient(a, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		key  string
		want keystatus.Key
	}{
		{"free", keystatus.Key{}},
		{"forever", keystatus.Key{Held: true, TTL: keystatus.NoExpiry}},
		{"released", keystatus.Key{Fence: 7, FenceSet: true}},
	} {
		got, err := keystatus.Read(t.Context(), c, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("Read(%s) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
	got, err := keystatus.Read(t.Context(), c, "held")
	if err != nil || !got.Held || got.TTL <= 0 || got.TTL > 30*time.Second || got.Fence != 41 || !got.FenceSet {
		t.Errorf("Read(held) = %+v, %v; want held with a TTL in (0, 30s] and fence 41", got, err)
	}
	if _, err := keystatus.Read(t.Context(), c, "garbled"); err == nil {
		t.Error("Read of a key whose fencing counter is not a number: no error")
	}
	srv.Kill()
	if _, err := keystatus.Read(t.Context(), c, "held"); err == nil {
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
		a, err := redisaddr.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		c, err := keystatus.NewClient(a, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got, err := keystatus.Read(t.Context(), c, "k")
		c.Close()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read through %s = %+v, %v; want an error with %q", a, got, err, want)
		}
	}
}
