//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestStatusStalledNodeCostsOneTimeout: a node that accepts connections and
// never answers (SIGSTOP, a blackhole) costs status one --timeout, not one
// for every key: once it did not answer in time it is asked nothing more,
// and its other keys say so. Before, status asked it INFO and then each key
// in turn, each bounded by --timeout: (keys+1) timeouts, 31s here for a
// minority failure that Redlock tolerates.
func TestStatusStalledNodeCostsOneTimeout(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	if err := servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	defer servers[2].Resume()
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	r := invoke(t, "", append([]string{"status", "--nodes", addrs, "--timeout", "1s"}, keys...)...)
	if r.code != 0 {
		t.Fatalf("status with one node of three stalled: want exit 0, got %v", r)
	}
	for _, k := range keys {
		if want := k + ": free: held on 0 of 3 nodes, 2 answered"; !strings.Contains(r.stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "did not answer within --timeout 1s"); n < len(keys)-1 {
		t.Errorf("status says of %d keys that the stalled node was not asked, want at least %d:\n%v", n, len(keys)-1, r)
	}
	// A bound 20 times what it takes (about one timeout), below the 31s
	// the keys one after the other cost.
	if r.took > 20*time.Second {
		t.Errorf("status with one stalled node and %d keys took %v, at --timeout 1s", len(keys), r.took)
	}
}

// TestDoctorNoFsyncOnRewrite: appendfsync always does not keep a node's
// locks through a machine's crash when no-appendfsync-on-rewrite is yes:
// Redis then skips the fsync while a BGSAVE or BGREWRITEAOF child runs
// (redis.conf: "the durability of Redis is the same as appendfsync no").
// Before, doctor read only append* and called such a node's persistence ok.
func TestDoctorNoFsyncOnRewrite(t *testing.T) {
	t.Parallel()
	skipping := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"),
		redistest.WithConfig("no-appendfsync-on-rewrite", "yes"))
	durable := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
	rep, r := doctorJSON(t, skipping.Addr()+","+durable.Addr())
	if len(rep.Nodes) != 2 {
		t.Fatalf("doctor --json: want 2 nodes, got %+v\n%v", rep, r)
	}
	c, ok := findCheck(rep.Nodes[0].Checks, "persistence", statusWarn)
	if !ok || !strings.Contains(c.Message, "no-appendfsync-on-rewrite yes") {
		t.Errorf("the node with no-appendfsync-on-rewrite yes: want a persistence warning that names it, got %+v", rep.Nodes[0].Checks)
	}
	if _, ok := findCheck(rep.Nodes[1].Checks, "persistence", statusOK); !ok {
		t.Errorf("the node with appendfsync always (and no-appendfsync-on-rewrite no): persistence not ok: %+v", rep.Nodes[1].Checks)
	}
}

// TestRunRenamedScriptCommands: servers whose redis.conf renamed (or
// disabled) EVAL and EVALSHA answer "ERR unknown command" to the scripts of
// a fenced acquisition, which no retry fixes: run fails at once with 1 and
// says so, as for a wrong password. Before, the error counted as a passing
// failure: run --wait 10s waited its 10s and exited 69 ("too many nodes
// failed"), and without --wait it waited for ever.
func TestRunRenamedScriptCommands(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3, redistest.WithConfig("rename-command", "EVAL", "EVAL_renamed"),
		redistest.WithConfig("rename-command", "EVALSHA", "EVALSHA_renamed"))
	for _, driver := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", driver, "--nodes", addrs, "--fencing", "--wait", "10s", "k", "--", "true")
		if r.code != exitFailure || !strings.Contains(r.stderr, "ERR unknown command, which retrying cannot fix") {
			t.Errorf("%s: run --fencing on servers without EVAL and EVALSHA: want exit 1 and the permanent error, got %v", driver, r)
		}
	}
}

// TestMaxClientsSaid: a server at maxclients answers a new connection with
// "-ERR max number of clients reached" and closes it; go-redis writes its
// command first and sees a reset connection or a broken pipe, which is all
// doctor and status said. They now say what the server says.
func TestMaxClientsSaid(t *testing.T) {
	t.Parallel()
	full := redistest.NewServer(t, redistest.WithConfig("maxclients", "1"))
	other := redistest.NewServer(t)
	// The one client the server takes, kept open for the test.
	conn, err := net.Dial("tcp", full.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("the first client's PING: %q, %v", line, err)
	}
	addrs := full.Addr() + "," + other.Addr()
	const said = "the server says: ERR max number of clients reached"
	r := invoke(t, "", "doctor", "--nodes", addrs)
	if r.code != exitFailure || !strings.Contains(r.stdout, said) {
		t.Errorf("doctor with a node at maxclients: want exit 1 and %q, got %v", said, r)
	}
	r = invoke(t, "", "status", "--nodes", addrs, "k")
	if r.code != exitUnavailable || !strings.Contains(r.stdout, said) {
		t.Errorf("status with a node at maxclients: want exit %d and %q, got %v", exitUnavailable, said, r)
	}
}

// TestHoldREADMERecipeReleasesOnScriptExit runs the README's hold recipe,
// its coproc and EXIT trap lines as written there, in a bash script under
// set -e whose step fails: hold must be gone and the lock free once the
// script ended. hold does not watch the script that started it; before the
// trap was in the recipe, such a script left hold extending the lock for
// ever (checked by hand: the lock still held 5s after the script exited).
func TestHoldREADMERecipeReleasesOnScriptExit(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The coproc line, the trap line, and the lines between them (the
	// recipe keeps hold's PID there, which the trap uses).
	var coproc, trap string
	for line := range strings.Lines(string(readme)) {
		switch {
		case coproc == "" && strings.HasPrefix(line, "coproc HOLD { exec redlock hold"):
			coproc = strings.TrimSpace(line)
		case coproc != "" && trap == "" && strings.HasPrefix(line, "trap '"):
			trap = strings.TrimSpace(line)
		case coproc != "" && trap == "":
			coproc += "\n" + strings.TrimSpace(line)
		}
	}
	if coproc == "" || trap == "" || !strings.Contains(trap, "EXIT") {
		t.Fatalf("README.md's hold recipe: want a coproc line and an EXIT trap after it, got %q and %q", coproc, trap)
	}
	servers, addrs := nodes(t, 3)
	coproc = strings.Replace(coproc, "exec redlock hold", "exec "+binary+" hold --nodes "+addrs, 1)
	script := "set -e\n" + coproc + "\n" + trap + "\n" +
		"read -r held <&\"${HOLD[0]}\"\necho \"$HOLD_PID\"\nfalse # a step fails\necho unreachable\n"
	cmd := exec.CommandContext(t.Context(), bash, "-c", script)
	cmd.Env = command(t.Context()).Env // without REDLOCK_ variables
	// A hold left running keeps the script's stderr open: do not wait
	// for it.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(string(out), "unreachable") {
		t.Fatalf("the script: want exit 1 at its failed step, got %v, stdout %q", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the script printed %q, not hold's pid", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	key := "deploy" // the recipe's
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		held := 0
		for _, s := range servers {
			if n, err := s.Do(t.Context(), "EXISTS", key); err == nil && fmt.Sprint(n) == "1" {
				held++
			}
		}
		if held == 0 && syscall.Kill(pid, 0) != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the script exited: hold (pid %d) alive: %v, key held on %d nodes", pid, syscall.Kill(pid, 0) == nil, held)
		}
	}
}
