//go:build unix

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestDoctorDelayedRestartAdviceSparesNoCounters: doctor's persistence
// warnings offer a delayed restart (down longer than the largest TTL) beside
// appendfsync always, after saying that the node forgets its locks and its
// fencing counters. A delayed restart saves the locks only: the node comes
// back without its counters, and a token can repeat (SAFETY.md,
// TestFencingDelayedRestartRepeatsToken in redlock/). Before, the advice
// offered it as a remedy for both.
func TestDoctorDelayedRestartAdviceSparesNoCounters(t *testing.T) {
	t.Parallel()
	none := redistest.NewServer(t, redistest.WithConfig("appendonly", "no"))
	everysec := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "everysec"))
	skipping := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"),
		redistest.WithConfig("no-appendfsync-on-rewrite", "yes"))
	rep, r := doctorJSON(t, none.Addr()+","+everysec.Addr()+","+skipping.Addr())
	if len(rep.Nodes) != 3 {
		t.Fatalf("doctor --json: want 3 nodes, got %+v\n%v", rep, r)
	}
	for i, name := range []string{"appendonly no", "appendfsync everysec", "no-appendfsync-on-rewrite yes"} {
		c, ok := findCheck(rep.Nodes[i].Checks, "persistence", statusWarn)
		if !ok {
			t.Errorf("the node with %s: no persistence warning: %+v", name, rep.Nodes[i].Checks)
			continue
		}
		if !strings.Contains(c.Message, "down for longer than") {
			t.Errorf("the node with %s: the warning no longer offers a delayed restart; update this test: %q", name, c.Message)
		}
		if !strings.Contains(c.Message, "not the fencing counters") {
			t.Errorf("the node with %s: the warning offers a delayed restart without saying that it loses the fencing counters: %q", name, c.Message)
		}
	}
}

// TestHoldExampleSeesTheLoss runs hold's first example, as its help prints
// it, under bash, with a first step that makes the lock lost (FLUSHALL on
// every node) and waits until hold has exited: the second step must not run
// without the lock, and the final wait must give 76, as the example's
// comment says. Before, the example ran ./step-2 all the same, and its
// wait "$HOLD_PID" could not give 76: bash unsets HOLD_PID once the coproc
// has exited, so the wait (and the trap's kill) got an empty argument.
func TestHoldExampleSeesTheLoss(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("no redis-cli")
	}
	servers, addrs := nodes(t, 3)
	help := invoke(t, "", "help", "hold")
	_, example, ok := strings.Cut(help.stdout, "  # hold the lock across the steps of a script\n")
	if !ok {
		t.Fatalf("hold's help has no example 'hold the lock across the steps of a script':\n%v", help)
	}
	example, _, _ = strings.Cut(example, "\n\n")
	key := fmt.Sprintf("example-%d", time.Now().UnixNano())
	var flush strings.Builder
	for _, s := range servers {
		_, port, _ := net.SplitHostPort(s.Addr())
		fmt.Fprintf(&flush, "%s -p %s FLUSHALL >/dev/null; ", cli, port)
	}
	replace := strings.NewReplacer(
		"redlock hold --wait 1m deploy", binary+" hold --ttl 1s --wait 1m "+key,
		"./step-1", "step1",
		"./step-2", "echo step-2 ran",
	)
	// step1 makes the lock lost, then reads hold's stdout to its end: hold
	// has exited once it closes (bash may have closed its own copy of the
	// descriptor and unset HOLD by then, which ends the read too); and then
	// waits until bash has reaped it (a zombie still answers kill -0).
	script := "step1() { " + flush.String() + "fd=${HOLD[0]}; [ -n \"$fd\" ] && cat <&\"$fd\" >/dev/null 2>&1; " +
		"while kill -0 \"${hold:-$HOLD_PID}\" 2>/dev/null; do sleep 0.05; done; return 0; }\n" +
		replace.Replace(strings.ReplaceAll("\n"+example, "\n  ", "\n")) + "\necho \"status $?\"\n"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script)
	cmd.Env = append(os.Environ(), "REDLOCK_NODES="+addrs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, out, script)
	}
	if strings.Contains(string(out), "step-2 ran") {
		t.Errorf("the example ran its second step after hold had lost the lock and exited:\n%s\nscript:\n%s", out, script)
	}
	if !strings.Contains(string(out), "status 76") {
		t.Errorf("the example's wait did not give 76 for a lock lost while the steps ran:\n%s\nscript:\n%s", out, script)
	}
}
