//go:build unix

package main

import (
	"errors"
	"strings"
	"testing"
)

// TestTLSToPlaintextServer gives run and doctor plaintext servers as
// rediss:// nodes: the TLS handshake gets no answer, and run said only
// "context deadline exceeded" of each node, doctor "unreachable". Both now
// say that the handshake failed and that the server answers in plaintext,
// for each such node; run through every driver.
func TestTLSToPlaintextServer(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3)
	var urls []string
	for _, s := range servers {
		urls = append(urls, "rediss://"+s.Addr())
	}
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

// TestAuthRefused: the refusals of the credentials, and not other errors.
func TestAuthRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("NOAUTH Authentication required."), true},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), true},
		{errors.New("goredis: PING: WRONGPASS invalid username-password pair"), true},
		{errors.New("NOPERM this user has no permissions to run the 'ping' command"), false},
		{errors.New("ERR WRONGPASS is not a code here"), false},
		{nil, false},
	} {
		if got := authRefused(tc.err); got != tc.want {
			t.Errorf("authRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
