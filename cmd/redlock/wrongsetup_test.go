//go:build unix

package main

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
)

// TestTLSToPlaintextServer gives run and doctor plaintext servers as
// rediss:// nodes: the TLS handshake gets no answer, and run said only
// "context deadline exceeded" of each node, doctor "unreachable". Both now
// say that the handshake failed and that the server answers in plaintext,
// for each such node; run through every driver.
func TestTLSToPlaintextServer(t *testing.T) {
	t.Parallel()
	servers, urls := tlsNodes(t, 3)
	nodeList := strings.Join(urls, ",")
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			r := invoke(t, "", "run", "--driver", d, "--wait", "0", "--node-timeout", "200ms", "--nodes", nodeList, "tls-"+d, "--", "true")
			if r.code != exitUnavailable {
				t.Fatalf("run over TLS to plaintext servers: want exit %d:\n%v", exitUnavailable, r)
			}
			// The nodes that failed before the verdict (two or
			// three: the Client does not wait for the last once no
			// quorum is possible), each once.
			told := 0
			for _, u := range urls {
				want := "redlock: node " + u + ": TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG)"
				failed := strings.Count(r.stderr, "redlock: node "+u+": "+d+": ")
				if n := strings.Count(r.stderr, want); n != failed {
					t.Errorf("%q told %d times, want %d (as the node's error):\n%v", want, n, failed, r)
				}
				told += failed
			}
			if told < 2 {
				t.Errorf("%d nodes' errors, want 2 or 3:\n%v", told, r)
			}
		})
	}
	t.Run("doctor", func(t *testing.T) {
		t.Parallel()
		r := invoke(t, "", "doctor", "--timeout", "1s", "--nodes", urls[0]+","+servers[1].Addr()+","+servers[2].Addr())
		if r.code != exitFailure {
			t.Fatalf("doctor with a plaintext server as rediss://: want exit %d:\n%v", exitFailure, r)
		}
		for _, want := range []string{"FAIL  " + urls[0] + "  TLS handshake failed\n", "TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("doctor does not say %q:\n%v", want, r)
			}
		}
		if strings.Contains(r.stdout, "unreachable") {
			t.Errorf("doctor calls a server that answers unreachable:\n%v", r)
		}
	})
}

// TestDoctorAuthRefused gives doctor a node with a wrong password: it
// called the node "unreachable", sending the operator to the network, with
// WRONGPASS only in the check's line. It says "authentication refused" now,
// and how to give the credentials.
func TestDoctorAuthRefused(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3)
	urls := setUser(t, servers, "doctor-auth", "right-Passw0rd")
	wrong := strings.Replace(urls[0], "right-Passw0rd", "wrong-Passw0rd", 1)
	r := invoke(t, "", "doctor", "--timeout", "1s", "--nodes", wrong+","+urls[1]+","+urls[2])
	if r.code != exitFailure {
		t.Fatalf("doctor with a wrong password: want exit %d:\n%v", exitFailure, r)
	}
	for _, want := range []string{"FAIL  redis://doctor-auth:xxxxx@" + servers[0].Addr() + "  authentication refused\n", "authentication refused: give the node's user and password in its address", "WRONGPASS"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor does not say %q:\n%v", want, r)
		}
	}
	if strings.Contains(r.stdout, "unreachable") || strings.Contains(r.stdout, "Passw0rd") {
		t.Errorf("doctor calls a node that refuses the password unreachable, or shows a password:\n%v", r)
	}
}

// TestAuthRefused: the refusals of the credentials, and not other errors,
// as the clients return them from real servers: doctor's PING (the go-redis
// client of keystatus) and a lock command through each driver, whose errors
// keep the client's typed reply in their chain (%w) for
// driver.PermanentCode. authRefused matched the codes in the error's text,
// and so took a reply that only quotes another server's refusal for one:
// MIGRATE to a target that wants a password says "ERR Target instance
// replied with error: NOAUTH ...". A reply flattened into a message (%v)
// reaches authRefused from no client: the four drivers wrap with %w, and
// doctor's client returns the reply itself.
func TestAuthRefused(t *testing.T) {
	t.Parallel()
	const password = "auth-Passw0rd"
	locked, _ := nodes(t, 1, redistest.WithPassword(password))
	open, _ := nodes(t, 1)
	setUser(t, open, "noset", password, "-set", "-ping")
	if _, err := open[0].Do(t.Context(), "ACL", "SETUSER", "off", "off", ">"+password, "~*", "+@all"); err != nil {
		t.Fatal(err)
	}
	if _, err := open[0].Do(t.Context(), "SET", "migrated", "v"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		code      string // in the error's text
		want      bool
	}{
		{"no password", "redis://" + locked[0].Addr(), "NOAUTH", true},
		{"wrong password", "redis://:wrong-Passw0rd@" + locked[0].Addr(), "WRONGPASS", true},
		{"unknown user", "redis://nobody:" + password + "@" + open[0].Addr(), "WRONGPASS", true},
		{"disabled user", "redis://off:" + password + "@" + open[0].Addr(), "WRONGPASS", true},
		{"no right to the command", "redis://noset:" + password + "@" + open[0].Addr(), "NOPERM", false},
	} {
		a, err := redisaddr.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		c, err := keystatus.NewClient(a, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Do(t.Context(), "PING").Err()
		c.Close()
		check := func(who string, err error) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), tc.code+" ") {
				t.Fatalf("%s, %s: error %v, want one with %s", tc.name, who, err, tc.code)
			}
			if got := authRefused(err); got != tc.want {
				t.Errorf("%s, %s: authRefused(%v) = %v, want %v", tc.name, who, err, got, tc.want)
			}
		}
		check("doctor's PING", err)
		for name, d := range map[string]driver.Driver{"goredis": goredis.Driver{}, "redigo": redigo.Driver{}, "rueidis": rueidis.Driver{}, "valkeygo": valkeygo.Driver{}} {
			n, err := d.Open(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			_, err = n.SetNX(t.Context(), "auth-refused", "v", time.Second)
			n.Close()
			check(name+"'s SET NX", err)
		}
	}
	// A refusal another server sent this one, quoted in an ERR reply.
	a, err := redisaddr.Parse("redis://" + open[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := keystatus.NewClient(a, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	host, port, _ := net.SplitHostPort(locked[0].Addr())
	err = c.Do(t.Context(), "MIGRATE", host, port, "migrated", 0, 5000).Err()
	if err == nil || !strings.Contains(err.Error(), ": NOAUTH ") {
		t.Fatalf("MIGRATE to a server that wants a password: %v, want an error that quotes its NOAUTH", err)
	}
	if authRefused(err) {
		t.Errorf("authRefused(%v) = true, want false: the target refused this server, not the client", err)
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("ERR WRONGPASS is not a code here"), false},
		{nil, false},
	} {
		if got := authRefused(tc.err); got != tc.want {
			t.Errorf("authRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
