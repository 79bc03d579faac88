//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestStatusTLSToPlaintextServer gives status a plaintext server as a
// rediss:// node: the TLS handshake gets no answer, and status said only
// "i/o timeout" of it, where run, hold and doctor say that the server
// answers in plaintext (TestTLSToPlaintextServer). status says it too, in
// its report and in --json, for every key it did not ask of that server.
func TestStatusTLSToPlaintextServer(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3)
	tlsURL := "rediss://" + servers[0].Addr()
	nodeList := tlsURL + "," + servers[1].Addr() + "," + servers[2].Addr()
	statusSaysForEachKey(t, nodeList, "TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG)")
}

// statusSaysForEachKey runs status on nodeList, two of whose three nodes
// answer, for two keys, in its report and in --json: it must exit 0 and
// say each of wants twice, once for each key.
func statusSaysForEachKey(t *testing.T, nodeList string, wants ...string) {
	t.Helper()
	for _, json := range []bool{false, true} {
		args := []string{"status", "--timeout", "1s", "--nodes", nodeList, "k1", "k2"}
		if json {
			args = append(args, "--json")
		}
		r := invoke(t, "", args...)
		if r.code != 0 {
			t.Fatalf("status (json %v), two of three nodes answering: want exit 0:\n%v", json, r)
		}
		for _, want := range wants {
			if n := strings.Count(r.stdout, want); n != 2 {
				t.Errorf("status (json %v) with plaintext as rediss:// says %q %d times, want 2 (once for each key):\n%v", json, want, n, r)
			}
		}
	}
}
