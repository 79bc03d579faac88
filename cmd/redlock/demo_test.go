//go:build unix

package main

import (
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	nodes := "Started 5 redis-server processes"
	if !haveRedisServer() {
		nodes = "in-process memory nodes" // the demo falls back to them, as it says
	}
	r := invoke(t, "", "demo", "--duration", "1s")
	if r.code != 0 {
		t.Fatalf("demo: %v", r)
	}
	for _, want := range []string{
		nodes,
		"never two holders at once",
		"the waiter held the lock",
		"Do canceled its function's context",
		"tokens: ",
		"refused by the store",
		"hand-off p50",
		"Per-node latency of the contention part",
		"Finished in",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestDemoMemory(t *testing.T) {
	t.Parallel()
	r := invoke(t, "", "demo", "--memory", "--duration", "500ms")
	if r.code != 0 || !strings.Contains(r.stdout, "in-process memory nodes") || !strings.Contains(r.stdout, "tokens: ") {
		t.Fatalf("demo --memory: %v", r)
	}
}

// demo says why it falls back to memory nodes: with REDISTEST_SERVER naming
// no program, it said "redis-server is not on PATH", where redis-server may
// well be, and the variable it reads was the cause.
func TestDemoServerEnvNamed(t *testing.T) {
	t.Parallel()
	r := invokeEnv(t, []string{"REDISTEST_SERVER=/nonexistent/redis-server"}, "", "demo", "--duration", "500ms")
	if r.code != 0 || !strings.Contains(r.stdout, `REDISTEST_SERVER="/nonexistent/redis-server" names no program that can be run, so this demo uses in-process memory nodes`) {
		t.Fatalf("demo with REDISTEST_SERVER naming no program: want exit 0 and the variable named, got %v", r)
	}
	if strings.Contains(r.stdout, "not on PATH") {
		t.Errorf("demo with REDISTEST_SERVER naming no program says redis-server is not on PATH:\n%s", r.stdout)
	}
}
