//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestStatusClusterTLSToPlaintextServer gives status and doctor a
// cluster-enabled plaintext cluster as a rediss:// cluster node: no seed
// answers the TLS handshake, and status said only "the cluster's slots are
// unknown: CLUSTER NODES failed: SEED: context deadline exceeded" of it,
// doctor "unreachable" and "no seed answered: SEED: context deadline
// exceeded", where both say of a server given so that it answers in
// plaintext (TestStatusTLSToPlaintextServer, TestTLSToPlaintextServer). They
// say it now of each seed, status in its report and in --json for every
// key.
func TestStatusClusterTLSToPlaintextServer(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	servers, _ := nodes(t, 2)
	seeds := c.Seeds()
	tlsURL := "rediss://" + seeds[0] + "?cluster=true&addr=" + seeds[1]
	nodeList := tlsURL + "," + servers[0].Addr() + "," + servers[1].Addr()
	hint := ": context deadline exceeded: TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG): give it as redis://, or give its tls-port"
	var wants []string
	for _, seed := range seeds {
		wants = append(wants, seed+hint)
	}
	statusSaysForEachKey(t, nodeList, wants...)
	r := invoke(t, "", "doctor", "--timeout", "1s", "--nodes", nodeList)
	if r.code != exitFailure {
		t.Fatalf("doctor with a plaintext cluster as rediss://: want exit %d:\n%v", exitFailure, r)
	}
	for _, want := range []string{"FAIL  " + tlsURL + "  TLS handshake failed\n", "no seed answered: " + seeds[0] + hint + "; " + seeds[1] + hint + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor does not say %q:\n%v", want, r)
		}
	}
	if strings.Contains(r.stdout, "unreachable") {
		t.Errorf("doctor calls a cluster that answers unreachable:\n%v", r)
	}
}

// TestRunClusterTLSToPlaintextServer gives run a cluster-enabled plaintext
// cluster as a rediss:// cluster node: run said only "SET NX: slot N:
// context deadline exceeded" of it, where it says of a server given so that
// it answers in plaintext (TestTLSToPlaintextServer). It says it now of each
// seed, through every driver that takes a cluster.
func TestRunClusterTLSToPlaintextServer(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	seeds := c.Seeds()
	tlsURL := "rediss://" + seeds[0] + "?cluster=true&addr=" + seeds[1]
	for _, d := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			r := invoke(t, "", "run", "--driver", d, "--wait", "0", "--node-timeout", "200ms", "--nodes", tlsURL, "tls-"+d, "--", "true")
			if r.code != exitUnavailable || !strings.Contains(r.stderr, "redlock: node "+tlsURL+": "+d+": ") {
				t.Fatalf("run over TLS to a plaintext cluster: want exit %d and the node's error:\n%v", exitUnavailable, r)
			}
			for _, seed := range seeds {
				want := "redlock: node " + tlsURL + ": seed " + seed + ": TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG): give it as redis://, or give its tls-port\n"
				if n := strings.Count(r.stderr, want); n != 1 {
					t.Errorf("%q told %d times, want once:\n%v", want, n, r)
				}
			}
		})
	}
}
