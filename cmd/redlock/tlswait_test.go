//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestTLSToPlaintextServerWhileWaiting: the warning that a wait goes on
// because too many nodes failed names, for a plaintext server given as
// rediss://, the failed TLS handshake, as the final error does; the probe
// runs under the attempt's context (it ends with the wait).
func TestTLSToPlaintextServerWhileWaiting(t *testing.T) {
	t.Parallel()
	_, urls := tlsNodes(t, 3)
	r := invoke(t, "", "run", "--wait", "3s", "--node-timeout", "200ms", "--nodes", strings.Join(urls, ","), "tls-wait", "--", "true")
	if r.code != exitUnavailable {
		t.Fatalf("run over TLS to plaintext servers: want exit %d:\n%v", exitUnavailable, r)
	}
	waiting, _, ok := strings.Cut(r.stderr, "redlock: run: ")
	if !ok || !strings.Contains(waiting, "redlock: waiting for tls-wait") {
		t.Fatalf("no waiting warning before the verdict:\n%v", r)
	}
	failed := strings.Count(waiting, ": rueidis: ")
	told := strings.Count(waiting, ": TLS handshake failed: the server does not speak TLS? on this port it answers in plaintext (+PONG)")
	if failed < 2 || told != failed {
		t.Errorf("the waiting warning tells %d failed nodes and the failed handshake of %d, want 2 or 3 of each:\n%v", failed, told, r)
	}
}
