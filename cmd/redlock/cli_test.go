//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// nextLine waits up to d for the next line of stdout and returns it.
func (b *background) nextLine(d time.Duration) string {
	b.t.Helper()
	select {
	case line, ok := <-b.lines:
		if !ok {
			b.wait(10 * time.Second)
			b.t.Fatalf("stdout ended without a line; exit %d, stderr:\n%s", b.code, b.stderr.String())
		}
		return line
	case <-time.After(d):
		b.t.Fatalf("no line on stdout within %v; stderr:\n%s", d, b.stderr.String())
	}
	return ""
}

// term stops a hold started in the background (SIGTERM) and waits for it:
// defer it where the test's end releases the lock.
func (b *background) term() {
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.wait(30 * time.Second)
}

// startHold starts "redlock hold" with args and returns it with the line it
// printed once it held the lock.
func startHold(t *testing.T, args ...string) (*background, holdLine) {
	t.Helper()
	b := start(t, append([]string{"hold"}, args...)...)
	line := b.nextLine(30 * time.Second)
	var h holdLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("hold printed %q, not its JSON line: %v", line, err)
	}
	return b, h
}

// valueOf returns the value of key on the servers, as a test reads it
// underneath the command: the lock's secret. A quorum holds it once granted;
// the other nodes may not.
func valueOf(t *testing.T, servers []*redistest.Server, key string) string {
	t.Helper()
	for _, s := range servers {
		v, err := s.Do(t.Context(), "GET", key)
		if err != nil {
			t.Fatal(err)
		}
		if str, ok := v.(string); ok && str != "" {
			return str
		}
	}
	t.Fatalf("GET %s found no value on any node", key)
	return ""
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := invoke(t, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "redlock github.com/go-redlock/redlock ") ||
		!strings.Contains(r.stdout, runtime.Version()) || !strings.Contains(r.stdout, "revision") {
		t.Fatalf("--version: want exit 0 and the module, a revision and %s on stdout, got %v", runtime.Version(), r)
	}
	// The Go command stamps the revision only when it builds in a Git
	// checkout whose .git is a directory and -buildvcs is not false.
	out, err := exec.Command("go", "env", "GOFLAGS").Output()
	root, rerr := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err == nil && rerr == nil && !strings.Contains(string(out), "buildvcs=false") &&
		dirExists(filepath.Join(strings.TrimSpace(string(root)), ".git")) {
		head, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err == nil && !strings.Contains(r.stdout, "revision "+strings.TrimSpace(string(head))) {
			t.Errorf("--version does not name the revision %s:\n%s", head, r.stdout)
		}
	}
}

func dirExists(p string) bool {
	return exec.Command("test", "-d", p).Run() == nil
}

func TestFormatVersion(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/go-redlock/redlock", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := formatVersion(info)
	want := "github.com/go-redlock/redlock v1.2.3, revision 0123456789abcdef0123456789abcdef01234567 (2026-11-30T10:00:00Z), modified, go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH
	if got != want {
		t.Errorf("formatVersion = %q, want %q", got, want)
	}
	info.Settings, info.Main.Version = nil, "(devel)"
	if got := formatVersion(info); !strings.Contains(got, "(devel), revision unknown") {
		t.Errorf("formatVersion without VCS settings = %q, want the version and \"revision unknown\"", got)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash": "__start_redlock",
		"zsh":  "#compdef redlock",
		"fish": "complete -c redlock",
	} {
		r := invoke(t, "", "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: want exit 0 and %q in the script, got exit %d, %d bytes of stdout, stderr:\n%s",
				shell, want, r.code, len(r.stdout), r.stderr)
		}
	}
	// The subcommands and a flag are offered.
	r := invoke(t, "", "__complete", "")
	for _, sub := range []string{"run", "hold", "status", "doctor", "demo"} {
		if !strings.Contains(r.stdout, sub) {
			t.Errorf("completing redlock's first word does not offer %s:\n%s", sub, r.stdout)
		}
	}
	r = invoke(t, "", "__complete", "hold", "--conf")
	if !strings.Contains(r.stdout, "--conflict-exit-code") {
		t.Errorf("completing hold --conf does not offer --conflict-exit-code:\n%s", r.stdout)
	}
	// run's KEY is no file; its CMD completes as the shell does (directive 0).
	for _, tc := range []struct {
		args      []string
		directive string
	}{
		{[]string{"__complete", "run", ""}, ":4\n"},
		{[]string{"__complete", "run", "k", ""}, ":0\n"},
		{[]string{"__complete", "hold", ""}, ":4\n"},
		{[]string{"__complete", "status", "a", ""}, ":4\n"},
	} {
		if r := invoke(t, "", tc.args...); !strings.HasSuffix(r.stdout, tc.directive) {
			t.Errorf("redlock %s: want the directive %q, got %q", strings.Join(tc.args, " "), tc.directive, r.stdout)
		}
	}
}

// TestRunPositionalKey names the lock with the first argument, and with
// --key, the alias after which every argument is the command's.
func TestRunPositionalKey(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	r := invoke(t, "", "run", "--nodes", addrs, "positional", "--", "sh", "-c", "echo ran")
	if r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("run KEY -- CMD: %v", r)
	}
	// The key is the one named: hold it, and run on it finds it busy.
	holder, _ := startHold(t, "--nodes", addrs, "positional")
	valueOf(t, servers, "positional") // hold set the key named

	r = invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "positional", "--", "true")
	if r.code != exitConflict {
		t.Errorf("run --wait 0 KEY on a held KEY: want exit %d, got %v", exitConflict, r)
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--key", "positional", "echo", "x")
	if r.code != exitConflict {
		t.Errorf("run --wait 0 --key KEY on a held KEY: want exit %d, got %v", exitConflict, r)
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold after SIGTERM: exit %d, want 0; stderr:\n%s", code, holder.stderr.String())
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--key", "positional", "echo", "alias")
	if r.code != 0 || r.stdout != "alias\n" {
		t.Errorf("run --key KEY CMD: %v", r)
	}
	r = invoke(t, "", "run", "--nodes", addrs, "only-a-key")
	if r.code != exitUsage || !strings.Contains(r.stderr, "no command") {
		t.Errorf("run KEY without a command: want exit 2 and \"no command\", got %v", r)
	}
}

// TestHoldThenRun holds a lock with hold; a run on the same key waits until
// hold is interrupted, then runs.
func TestHoldThenRun(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	before := time.Now()
	holder, h := startHold(t, "--nodes", addrs, "--ttl", "3s", "--node-timeout", "900ms", "shared")
	if h.Key != "shared" || h.Token != 0 {
		t.Errorf("hold's line %+v: want key shared and token 0 without --fencing", h)
	}
	until, err := time.Parse(untilFormat, h.Until)
	if err != nil || !strings.HasSuffix(h.Until, "Z") || len(h.Until) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("hold's until %q: want RFC 3339 in UTC with milliseconds (%v)", h.Until, err)
	}
	if until.Before(before) || until.After(time.Now().Add(3*time.Second)) {
		t.Errorf("hold's until %v: want within the 3s TTL from the grant (started %v)", until, before)
	}

	// A generous node timeout: see waitForWaiter.
	waiter := start(t, "run", "--nodes", addrs, "--node-timeout", "2s", "shared", "--", "echo", "ran after hold")
	waitForWaiter(t, servers, "shared")
	// hold keeps the lock beyond its TTL.
	time.Sleep(4 * time.Second)
	select {
	case line := <-waiter.lines:
		t.Fatalf("run printed %q while hold held the lock", line)
	default:
	}
	if err := holder.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold after SIGINT: exit %d, want 0; stderr:\n%s", code, holder.stderr.String())
	}
	waiter.waitLine("ran after hold", 30*time.Second)
	if code := waiter.wait(30 * time.Second); code != 0 {
		t.Fatalf("run after hold: exit %d, want 0; stderr:\n%s", code, waiter.stderr.String())
	}
}

// TestHoldFor holds a lock for a given time, with a fencing token, then
// releases it.
func TestHoldFor(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	began := time.Now()
	holder, h := startHold(t, "--nodes", addrs, "--for", "1500ms", "--fencing", "window")
	if h.Token == 0 {
		t.Errorf("hold --fencing printed token 0: %+v", h)
	}
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold --for 1500ms: exit %d, want 0; stderr:\n%s", code, holder.stderr.String())
	}
	if took := time.Since(began); took < 1500*time.Millisecond {
		t.Errorf("hold --for 1500ms ended after %v", took)
	}
	// Released, not left to expire: free at once.
	r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--fencing", "window", "--", "sh", "-c", `echo "$REDLOCK_TOKEN"`)
	if r.code != 0 || r.stdout != fmt.Sprintln(h.Token+1) {
		t.Errorf("run --wait 0 --fencing after hold --for ended: want exit 0 and token %d, got %v", h.Token+1, r)
	}
}

// TestHoldLost deletes the lock underneath hold: it exits with 76.
// TestHoldStopSignals: each signal that ends a process by default makes
// hold release the lock and exit with 0 (SIGQUIT too, which would otherwise
// dump the goroutines and leave the lock held for its TTL).
func TestHoldStopSignals(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		holder, _ := startHold(t, "--nodes", addrs, "stop")
		if err := holder.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(30 * time.Second); code != 0 {
			t.Fatalf("hold after %v: exit %d, want 0; stderr:\n%s", sig, code, holder.stderr.String())
		}
		if r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "stop", "--", "true"); r.code != 0 {
			t.Fatalf("run after hold ended by %v: want the lock free, got %v", sig, r)
		}
	}
}

func TestHoldLost(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "1500ms", "-v", "lost")
	deleteEverywhere(t, servers, "lost")
	if code := holder.wait(30 * time.Second); code != exitLockLost {
		t.Fatalf("hold whose lock was deleted: exit %d, want %d; stderr:\n%s", code, exitLockLost, holder.stderr.String())
	}
	if s := holder.stderr.String(); !strings.Contains(s, "was lost") || !strings.Contains(s, "lost lost after") {
		t.Errorf("hold's stderr does not tell the loss (with -v, how):\n%s", s)
	}
}

// TestStatus shows a held and a free key on every node, with --prefix, as
// text and JSON, and never the lock's value.
func TestStatus(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, h := startHold(t, "--nodes", addrs, "--prefix", "app:", "--fencing", "--ttl", "30s", "report")
	value := valueOf(t, servers, "app:report")

	r := invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "report", "nobody")
	if r.code != 0 {
		t.Fatalf("status: %v", r)
	}
	// A quorum holds it at once; the third node as soon as its SET lands.
	if !regexp.MustCompile(`(?m)^report: held: held on [23] of 3 nodes, 3 answered, quorum 2$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "nobody: free: held on 0 of 3 nodes, 3 answered, quorum 2\n") {
		t.Errorf("status does not say report is held and nobody free:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("status printed the lock's value %q:\n%v", value, r)
	}

	r = invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "--json", "report", "nobody")
	if r.code != 0 {
		t.Fatalf("status --json: %v", r)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("status --json printed the lock's value %q:\n%v", value, r)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if rep.Nodes != 3 || rep.Quorum != 2 || len(rep.Keys) != 2 {
		t.Fatalf("status --json: %+v", rep)
	}
	held, free := rep.Keys[0], rep.Keys[1]
	if held.Key != "report" || held.State != keyHeld || held.HeldOn < 2 || held.Fence == nil || *held.Fence != h.Token {
		t.Errorf("status --json of the held key: %+v, want held on a quorum with fence %d", held, h.Token)
	}
	fenced := 0 // the token is written to a quorum at least
	for _, n := range held.Nodes {
		if n.Held == nil || !*n.Held || n.TTLMillis == nil || *n.TTLMillis <= 0 || *n.TTLMillis > 30000 || n.Error != "" {
			t.Errorf("status --json of the held key on %s: %+v, want held with a TTL in (0, 30s]", n.Addr, n)
		}
		if n.Fence != nil && *n.Fence == h.Token {
			fenced++
		}
	}
	if fenced < rep.Quorum {
		t.Errorf("status --json shows the fence %d on %d nodes, fewer than a quorum", h.Token, fenced)
	}
	if free.Key != "nobody" || free.State != keyFree || free.HeldOn != 0 || free.Fence != nil {
		t.Errorf("status --json of the free key: %+v", free)
	}
	for _, n := range free.Nodes {
		if n.Held == nil || *n.Held || n.TTLMillis != nil || n.Fence != nil || n.Error != "" {
			t.Errorf("status --json of the free key on %s: %+v", n.Addr, n)
		}
	}

	// Without the prefix, the key is another one: free.
	r = invoke(t, "", "status", "--nodes", addrs, "report")
	if r.code != 0 || !strings.Contains(r.stdout, "report: free") {
		t.Errorf("status without --prefix: want the key free, got %v", r)
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold after SIGTERM: exit %d; stderr:\n%s", code, holder.stderr.String())
	}
	// Released: free, with the fencing counter kept.
	r = invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "--json", "report")
	rep = statusReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("status --json after the release: %v\n%v", err, r)
	}
	if k := rep.Keys[0]; k.State != keyFree || k.Fence == nil || *k.Fence != h.Token {
		t.Errorf("status after the release: %+v, want free with the fence %d kept", k, h.Token)
	}
}

// TestStatusLegacyFenceCounter: the FENCE status shows is the counter the
// next fenced grant draws its token from, which is the per-key counter of
// earlier versions (driver.LegacyFenceKey) where that is larger than the
// slot's: the acquiring script reads both. Status read the slot's only, and
// showed no counter for a key whose next token is 42.
func TestStatusLegacyFenceCounter(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, s := range servers[:2] { // left by an old version's grants
		if _, err := s.Do(t.Context(), "SET", driver.LegacyFenceKey("app:report"), "41"); err != nil {
			t.Fatal(err)
		}
	}
	// And by a version that kept one counter per slot for every prefix.
	if _, err := servers[0].Do(t.Context(), "SET", driver.FenceKey("app:report"), "40"); err != nil {
		t.Fatal(err)
	}
	status := func() (statusReport, string) {
		t.Helper()
		r := invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "--json", "report")
		var rep statusReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Fatalf("status --json: %v\n%v", err, r)
		}
		r = invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "report")
		if r.code != 0 {
			t.Fatalf("status: %v", r)
		}
		return rep, r.stdout
	}
	rep, text := status()
	k := rep.Keys[0]
	if k.Fence == nil || *k.Fence != 41 {
		t.Errorf("status --json before any new grant: key fence %v, want 41 (the per-key counter)", k.Fence)
	}
	for i, n := range k.Nodes {
		want := i < 2
		if got := n.Fence != nil && *n.Fence == 41 && n.FenceLegacy != nil && *n.FenceLegacy == 41 && n.FenceSlot == nil; got != want {
			t.Errorf("status --json on node %d: %+v; want fence 41 from the per-key counter: %v", i, n, want)
		}
		if got := n.FenceShared != nil && *n.FenceShared == 40; got != (i == 0) {
			t.Errorf("status --json on node %d: %+v; want the shared counter 40: %v", i, n, i == 0)
		}
	}
	if c := strings.Count(text, "41 (slot -, per-key 41)"); c != 1 {
		t.Errorf("status shows the per-key counter alone on %d nodes, want 1:\n%s", c, text)
	}
	if c := strings.Count(text, "41 (slot -, shared 40, per-key 41)"); c != 1 {
		t.Errorf("status shows the shared and per-key counters on %d nodes, want 1:\n%s", c, text)
	}

	holder, h := startHold(t, "--nodes", addrs, "--prefix", "app:", "--fencing", "--ttl", "30s", "report")
	defer holder.term()
	if h.Token != 42 {
		t.Fatalf("hold's token %d, want 42: above the per-key counter", h.Token)
	}
	rep, text = status()
	k = rep.Keys[0]
	if k.Fence == nil || *k.Fence != 42 {
		t.Errorf("status --json after the grant: key fence %v, want 42", k.Fence)
	}
	both := 0 // nodes of the grant's quorum with the per-key counter below the slot's
	for _, n := range k.Nodes {
		if n.FenceSlot != nil && *n.FenceSlot == 42 && n.FenceLegacy != nil && *n.FenceLegacy == 41 {
			both++
			if n.Fence == nil || *n.Fence != 42 {
				t.Errorf("status --json on %s: %+v, want fence 42, the larger", n.Addr, n)
			}
		}
	}
	if both == 0 || !strings.Contains(text, "42 (slot 42, per-key 41)") {
		t.Errorf("status does not show both counters on a node with both (%d in JSON):\n%s", both, text)
	}
}

// TestStatusNodeErrors reports the nodes that cannot be asked, and exits
// with 69 when fewer than a quorum answer. A node whose fencing counter is
// not a number answers for the key (held or not), its counter unreadable.
func TestStatusNodeErrors(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	if _, err := servers[0].Do(t.Context(), "SET", driver.FenceKey("k"), "not a number"); err != nil {
		t.Fatal(err)
	}
	servers[1].Kill()
	servers[2].Kill()
	r := invoke(t, "", "status", "--nodes", addrs, "--timeout", "1s", "k")
	if r.code != exitUnavailable {
		t.Fatalf("status with two nodes down and one with a bad counter: want exit %d, got %v", exitUnavailable, r)
	}
	for _, want := range []string{servers[1].Addr(), "not a number", "k: unknown"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, r.stdout)
		}
	}
	// In JSON, a node that could not be asked has no "held": unknown is
	// not free.
	r = invoke(t, "", "status", "--nodes", addrs, "--timeout", "1s", "--json", "k")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v\n%v", err, r)
	}
	for _, n := range rep.Keys[0].Nodes {
		if (n.Error != "") != (n.Held == nil) {
			t.Errorf("status --json on %s: %+v: want \"held\" exactly when the node answered", n.Addr, n)
		}
	}
	if strings.Count(r.stdout, `"held"`) != 1 {
		t.Errorf("status --json: want \"held\" for the one node that answered:\n%s", r.stdout)
	}
	if n := rep.Keys[0].Nodes[0]; n.Held == nil || n.Fence != nil || !strings.Contains(n.FenceError, "not a number") {
		t.Errorf("status --json on %s, whose counter is not a number: %+v: want \"held\", no fence, fence_error saying so", n.Addr, n)
	}
	servers2, addrs2 := nodes(t, 3)
	servers2[2].Kill()
	r = invoke(t, "", "status", "--nodes", addrs2, "--timeout", "1s", "k")
	if r.code != 0 || !strings.Contains(r.stdout, "k: free: held on 0 of 3 nodes, 2 answered") {
		t.Errorf("status with one node of three down: want exit 0 and the key free, got %v", r)
	}
}

// TestStatusRefusedAndDuplicate: status reports a node that refuses the
// connection (a wrong password) by its error, not as a free key with a
// garbled counter, and refuses one server under two addresses, as run does.
func TestStatusRefusedAndDuplicate(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	locked := redistest.NewServer(t, redistest.WithPassword("pw"))
	r := invoke(t, "", "status", "--nodes", addrs+",redis://:wrong@"+locked.Addr(), "--timeout", "2s", "k")
	if !strings.Contains(r.stdout, "WRONGPASS") || strings.Contains(r.stdout, "not a number") {
		t.Errorf("status with a wrong password: want the node's WRONGPASS, got %v", r)
	}
	_, port, _ := strings.Cut(servers[0].Addr(), ":")
	r = invoke(t, "", "status", "--nodes", addrs+",localhost:"+port, "--timeout", "2s", "k")
	if r.code != exitUsage || !strings.Contains(r.stderr, "reach the same server") {
		t.Errorf("status with one server under two addresses: want exit %d and the reason, got %v", exitUsage, r)
	}
}

// TestExitUnavailable: with a majority of the nodes down, run and hold exit
// with 69, whatever --conflict-exit-code says. (One attempt: Lock's verdict
// after several is its last finished attempt's, which the live node can
// refuse while the previous attempt's key is being released there, and a
// round is decided once a quorum is impossible, so with a refusal and one
// failure among its first replies it is not "unavailable".)
func TestExitUnavailable(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	servers[0].Kill()
	servers[1].Kill()
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"run", "--nodes", addrs, "--wait", "0", "k", "--", "touch", marker},
		{"hold", "--nodes", addrs, "--wait", "0", "k"},
		{"run", "--nodes", addrs, "--wait", "0", "--conflict-exit-code", "9", "k", "--", "touch", marker},
	} {
		r := invoke(t, "", args...)
		if r.code != exitUnavailable || !strings.Contains(r.stderr, "too many nodes failed") {
			t.Errorf("redlock %s with 2 of 3 nodes down: want exit %d, got %v", strings.Join(args, " "), exitUnavailable, r)
		}
		if r.stdout != "" {
			t.Errorf("redlock %s printed on stdout: %q", strings.Join(args, " "), r.stdout)
		}
		// In the command's words (--wait 0), not the library's option.
		if !strings.Contains(r.stderr, "too many nodes failed for a quorum (--wait 0: one attempt):") || strings.Contains(r.stderr, "WithMaxAttempts") {
			t.Errorf("redlock %s: want the reason in --wait's words, got:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
	if fileExists(marker) {
		t.Error("a run whose lock was unavailable ran its command")
	}
}

func TestConflictExitCode(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	startHold(t, "--nodes", addrs, "busy")
	// A generous --node-timeout: on a loaded machine, a node slower than the
	// default 200ms counts as failed, and the verdict would be 69.
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy", "--", "true"}, exitConflict},
		{[]string{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "300ms", "busy", "--", "true"}, exitConflict},
		{[]string{"hold", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy"}, exitConflict},
		{[]string{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--conflict-exit-code", "9", "busy", "--", "true"}, 9},
		{[]string{"hold", "--nodes", addrs, "--node-timeout", "2s", "--wait", "300ms", "--conflict-exit-code", "1", "busy"}, 1},
		{[]string{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--conflict-exit-code", "0", "busy", "--", "true"}, 0},
		{[]string{"run", "--nodes", addrs, "--conflict-exit-code", "-1", "busy", "--", "true"}, exitUsage},
		{[]string{"run", "--nodes", addrs, "--conflict-exit-code", "256", "busy", "--", "true"}, exitUsage},
	} {
		r := invoke(t, "", tc.args...)
		if r.code != tc.want {
			t.Errorf("redlock %s: want exit %d, got %v", strings.Join(tc.args, " "), tc.want, r)
		}
	}
	// With 0, a busy lock is no error: nothing on stderr, as flock -E 0;
	// -v still tells.
	quiet := []string{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--conflict-exit-code", "0", "busy", "--", "true"}
	if r := invoke(t, "", quiet...); r.code != 0 || r.stderr != "" {
		t.Errorf("--conflict-exit-code 0 on a busy lock: want exit 0 and no output, got %v", r)
	}
	if r := invoke(t, "", append([]string{"run", "-v"}, quiet[1:]...)...); r.code != 0 || !strings.Contains(r.stderr, "not obtained") {
		t.Errorf("-v --conflict-exit-code 0 on a busy lock: want exit 0 and the reason, got %v", r)
	}
}

// TestEnvironment gives the flags through REDLOCK_ variables: each applies,
// the command line wins, and a bad value is a usage error naming the
// variable.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	// REDLOCK_NODE_TIMEOUT: a node slower than the default 200ms on a loaded
	// machine would count as failed, and "held elsewhere" become 69.
	env := func(kv ...string) []string {
		return append([]string{"REDLOCK_NODES=" + addrs, "REDLOCK_NODE_TIMEOUT=2s"}, kv...)
	}

	// REDLOCK_FENCING, REDLOCK_PREFIX, REDLOCK_TTL reach the lock.
	holder := startEnv(t, env("REDLOCK_FENCING=true", "REDLOCK_PREFIX=env:", "REDLOCK_TTL=20s"), "hold", "k")
	var h holdLine
	if err := json.Unmarshal([]byte(holder.nextLine(30*time.Second)), &h); err != nil || h.Token == 0 {
		t.Fatalf("hold with REDLOCK_FENCING=true: line %+v (%v), want a token", h, err)
	}
	r := invokeEnv(t, env("REDLOCK_PREFIX=env:", "REDLOCK_JSON=1"), "", "status", "k")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("status with REDLOCK_JSON=1: %v\n%v", err, r)
	}
	k := rep.Keys[0]
	var ttl int64
	for _, n := range k.Nodes {
		if n.TTLMillis != nil {
			ttl = max(ttl, *n.TTLMillis)
		}
	}
	if k.State != keyHeld || ttl <= 10000 {
		t.Errorf("status with REDLOCK_PREFIX=env: %+v, want held with REDLOCK_TTL's 20s", k)
	}
	// REDLOCK_WAIT and REDLOCK_CONFLICT_EXIT_CODE; flags win.
	r = invokeEnv(t, env("REDLOCK_PREFIX=env:", "REDLOCK_WAIT=0", "REDLOCK_CONFLICT_EXIT_CODE=9"), "", "run", "k", "--", "true")
	if r.code != 9 {
		t.Errorf("run with REDLOCK_WAIT=0 and REDLOCK_CONFLICT_EXIT_CODE=9 on a held key: want exit 9, got %v", r)
	}
	r = invokeEnv(t, env("REDLOCK_PREFIX=env:", "REDLOCK_WAIT=0", "REDLOCK_CONFLICT_EXIT_CODE=9"), "", "run", "--conflict-exit-code", "8", "k", "--", "true")
	if r.code != 8 {
		t.Errorf("run --conflict-exit-code 8 with REDLOCK_CONFLICT_EXIT_CODE=9: want exit 8, got %v", r)
	}
	r = invokeEnv(t, env("REDLOCK_PREFIX=other:", "REDLOCK_WAIT=0"), "", "run", "--prefix", "", "k", "--", "echo", "free")
	if r.code != 0 || r.stdout != "free\n" {
		t.Errorf("run --prefix '' with REDLOCK_PREFIX=other: want the unprefixed key, free; got %v", r)
	}
	r = invokeEnv(t, []string{"REDLOCK_NODES=127.0.0.1:1", "REDLOCK_WAIT=0", "REDLOCK_NODE_TIMEOUT=2s"}, "", "run", "--nodes", addrs, "k", "--", "echo", "flag wins")
	if r.code != 0 || r.stdout != "flag wins\n" {
		t.Errorf("run --nodes with a dead REDLOCK_NODES: want the flag's nodes, got %v", r)
	}
	// REDLOCK_VERBOSE and REDLOCK_DRIVER.
	r = invokeEnv(t, env("REDLOCK_VERBOSE=true", "REDLOCK_DRIVER=redigo", "REDLOCK_WAIT=5s"), "", "run", "v", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "acquired v after") {
		t.Errorf("run with REDLOCK_VERBOSE=true: want the grant told on stderr, got %v", r)
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold after SIGTERM: exit %d; stderr:\n%s", code, holder.stderr.String())
	}

	for _, bad := range []struct{ kv, cmd string }{
		{"REDLOCK_TTL=ten seconds", "run"},
		{"REDLOCK_WAIT=-", "run"},
		{"REDLOCK_FENCING=maybe", "hold"},
		{"REDLOCK_CONFLICT_EXIT_CODE=x", "run"},
		{"REDLOCK_GRACE=1", "run"},
		{"REDLOCK_NODE_TIMEOUT=fast", "hold"},
		{"REDLOCK_TIMEOUT=soon", "status"},
		{"REDLOCK_MAX_SKEW=1", "doctor"},
	} {
		args := argsFor(bad.cmd)
		r := invokeEnv(t, env(bad.kv), "", args...)
		name, _, _ := strings.Cut(bad.kv, "=")
		if r.code != exitUsage || !strings.Contains(r.stderr, name) {
			t.Errorf("redlock %s with %s: want exit 2 and %s named on stderr, got %v", bad.cmd, bad.kv, name, r)
		}
	}
}

// TestVerbose tells the wait and the grant on stderr with -v, and nothing
// without.
func TestVerbose(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--for", "1s", "k")
	r := invoke(t, "", "run", "--nodes", addrs, "-v", "--fencing", "--wait", "30s", "k", "--", "true")
	if r.code != 0 {
		t.Fatalf("run -v: %v", r)
	}
	for _, want := range []string{"waiting for k (held elsewhere", "acquired k after ", ", token 1", "released k"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run -v does not say %q on stderr:\n%s", want, r.stderr)
		}
	}
	holder.wait(30 * time.Second)
	r = invoke(t, "", "run", "--nodes", addrs, "k", "--", "true")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("run without -v: want nothing on stderr, got %v", r)
	}
}

// setUser creates on every server the ACL user with password and every
// right but those that without takes away ("-info"), and returns the
// servers' addresses as that user.
func setUser(t *testing.T, servers []*redistest.Server, user, password string, without ...string) []string {
	t.Helper()
	urls := make([]string, len(servers))
	for i, s := range servers {
		rule := append([]string{"ACL", "SETUSER", user, "on", ">" + password, "~*", "&*", "+@all"}, without...)
		if _, err := s.Do(t.Context(), rule...); err != nil {
			t.Fatal(err)
		}
		urls[i] = "redis://" + user + ":" + password + "@" + s.Addr()
	}
	return urls
}

// TestVerboseSubscribeRefused waits, with -v, as an ACL user that may lock
// but not SSUBSCRIBE: the wait polls instead of hearing the release, and
// said nothing about it; it says now, once a node, through every driver, and
// still gets the lock once the holder releases it.
func TestVerboseSubscribeRefused(t *testing.T) {
	t.Parallel()
	const password = "nosub-Passw0rd"
	servers, addrs := nodes(t, 3)
	urls := setUser(t, servers, "nosub", password, "-ssubscribe")
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "nosub-" + d
			holder, _ := startHold(t, "--nodes", addrs, key)
			defer holder.term()
			waiter := start(t, "run", "-v", "--driver", d, "--nodes", strings.Join(urls, ","), "--wait", "60s", key, "--", "true")
			const said = "refuses to tell when " + "nosub-"
			for deadline := time.Now().Add(30 * time.Second); strings.Count(waiter.stderr.String(), said) < len(servers); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("run -v as a user without SSUBSCRIBE: no line per node saying %q within 30s; stderr:\n%s", said, waiter.stderr.String())
				}
			}
			holder.term()
			if code := waiter.wait(60 * time.Second); code != 0 {
				t.Fatalf("run: exit %d once the holder released, want 0; stderr:\n%s", code, waiter.stderr.String())
			}
			out := waiter.stderr.String()
			if n := strings.Count(out, said); n != len(servers) {
				t.Errorf("want the refusal told once a node (%d), got %d:\n%s", len(servers), n, out)
			}
			if !strings.Contains(out, "NOPERM") || strings.Contains(out, password) {
				t.Errorf("want NOPERM named and no password shown:\n%s", out)
			}
		})
	}
}

// TestHoldReleaseFindsLost deletes the lock underneath hold between two
// extensions and interrupts hold at once: the release finds it gone from a
// quorum, so it was lost while held, and hold exits with 76.
func TestHoldReleaseFindsLost(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "30s", "k") // extended every 10s
	deleteEverywhere(t, servers, "k")
	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(30 * time.Second); code != exitLockLost {
		t.Fatalf("hold whose lock was deleted before its release: exit %d, want %d; stderr:\n%s", code, exitLockLost, holder.stderr.String())
	}
}

// TestHoldReleaseUnavailable kills a majority of the nodes under hold and
// interrupts it: the release proves nothing lost, so hold says it could not
// release and exits with 0.
func TestHoldReleaseUnavailable(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "30s", "-v", "k") // extended every 10s
	// Past the node timeout (200ms), every node has answered the
	// acquisition, or failed: Unlock counts a node whose SET is still
	// unanswered as one that no longer holds the lock.
	time.Sleep(time.Second)
	servers[0].Kill()
	servers[1].Kill()
	holder.cmd.Process.Signal(syscall.SIGINT)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold released with 2 of 3 nodes down: exit %d, want 0; stderr:\n%s", code, holder.stderr.String())
	}
	if s := holder.stderr.String(); !strings.Contains(s, "releasing the lock \"k\" failed") {
		t.Errorf("hold does not say that the release failed:\n%s", s)
	}
}

// TestVerboseExtensionFailure pauses a majority of the nodes under hold -v
// for longer than an extension interval, less than the validity: the failed
// extension is told, on one line, as retried, with the paused nodes'
// errors as its cause (not "redlock: lock lost", which its error carries
// too, with the causes on the lines after), then the one that succeeds
// again, then the release.
func TestVerboseExtensionFailure(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "6s", "-v", "k") // extended every 2s
	for _, s := range servers[:2] {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Resume() })
	}
	// Resumed once the failure is told, 2s and a node timeout after the
	// grant, well inside the validity (6s); generous bounds, for a busy
	// machine.
	waitStderr := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(holder.stderr.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("hold -v did not tell %q within 20s; stderr:\n%s", want, holder.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitStderr("extending k failed")
	for _, s := range servers[:2] {
		if err := s.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	waitStderr("extended k again after")
	holder.cmd.Process.Signal(syscall.SIGTERM)
	code := holder.wait(30 * time.Second)
	s := holder.stderr.String()
	if code != 0 || !strings.Contains(s, "released k") {
		t.Fatalf("hold -v with a majority paused past an extension: want exit 0 and the release told; exit %d, stderr:\n%s", code, s)
	}
	var line, next string
	for l := range strings.Lines(s) {
		if line != "" && next == "" {
			next = l
		}
		if strings.HasPrefix(l, "redlock: extending k failed (") {
			line = l
		}
	}
	if !strings.Contains(line, "; retrying while its validity lasts (") || strings.Contains(s, "lock lost") {
		t.Errorf("the failed extension is not told as retried, or -v says \"lock lost\":\n%s", s)
	}
	for _, p := range servers[:2] {
		if !strings.Contains(line, "node "+p.Addr()+": ") {
			t.Errorf("the failed extension's line does not name the paused node %s as its cause:\n%s", p.Addr(), s)
		}
	}
	if !strings.HasPrefix(next, "redlock: ") {
		t.Errorf("the failed extension's cause is not on its line: the next line is %q:\n%s", next, s)
	}
}

// TestPermanentNodeError gives a wrong password: retrying cannot fix it, so
// run fails at once with 1 rather than waiting, and never shows the password.
// TestScriptNOPERMStops runs run --fencing as an ACL user without +get,
// which the fencing script calls: Redis 7.0 refuses it inside the script
// with "ERR The user executing the script can't run this command", which
// was not taken for NOPERM, so run retried what can never succeed until
// --wait ended (60s here), then said only that the lock was not obtained.
// It stops at once now, through every driver, naming NOPERM.
func TestScriptNOPERMStops(t *testing.T) {
	t.Parallel()
	const password = "noget-Passw0rd"
	servers, _ := nodes(t, 3)
	urls := setUser(t, servers, "noget", password, "-get")
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			r := invoke(t, "", "run", "--driver", d, "--fencing", "--wait", "60s", "--nodes", strings.Join(urls, ","), "k-"+d, "--", "true")
			if r.code != exitFailure || !strings.Contains(r.stderr, "answered NOPERM, which retrying cannot fix") || !strings.Contains(r.stderr, "can't run this command") {
				t.Errorf("run --fencing as a user without GET: want exit 1, the script's refusal named NOPERM and stopped at once, got %v", r)
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Errorf("run printed the password:\n%v", r)
			}
		})
	}
}

func TestPermanentNodeError(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3, redistest.WithPassword("right-Pa55"))
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, "redis://:wrong-Pa55@"+s.Addr())
	}
	r := invoke(t, "", "run", "--nodes", strings.Join(addrs, ","), "k", "--", "true")
	if r.code != exitFailure || !strings.Contains(r.stderr, "retrying cannot fix") {
		t.Errorf("run with a wrong password: want exit 1 and the permanent error, got %v", r)
	}
	if strings.Contains(r.stdout+r.stderr, "wrong-Pa55") {
		t.Errorf("run printed the password:\n%v", r)
	}
	r = invoke(t, "", "hold", "--nodes", strings.Join(addrs, ","), "k")
	if r.code != exitFailure || !strings.Contains(r.stderr, "retrying cannot fix") || r.stdout != "" {
		t.Errorf("hold with a wrong password: want exit 1, the permanent error and no line on stdout, got %v", r)
	}
	if strings.Contains(r.stdout+r.stderr, "wrong-Pa55") {
		t.Errorf("hold printed the password:\n%v", r)
	}
}

// TestDatabaseOutOfRange names a database the servers do not have: retrying
// cannot fix it either, so run fails at once with 1 rather than waiting for
// ever (without --wait) or calling the nodes unavailable (69).
func TestDatabaseOutOfRange(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3)
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, "redis://"+s.Addr()+"/99")
	}
	for _, driver := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", driver, "--nodes", strings.Join(addrs, ","), "k", "--", "true")
		if r.code != exitFailure || !strings.Contains(r.stderr, "DB index is out of range, which retrying cannot fix") {
			t.Errorf("%s: run on /99 of servers with 16 databases: want exit 1 and the permanent error, got %v", driver, r)
		}
	}
}

// TestRunWaitsWhileUnavailable: without --wait, run keeps waiting while a
// majority of the nodes is down, says so once without -v, and a signal ends
// the wait.
func TestRunWaitsWhileUnavailable(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	servers[0].Kill()
	servers[1].Kill()
	marker := filepath.Join(t.TempDir(), "ran")
	b := start(t, "run", "--nodes", addrs, "k", "--", "touch", marker)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(b.stderr.String(), "waiting for k (2 of 3 nodes failed") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // several more attempts
	b.cmd.Process.Signal(syscall.SIGINT)
	if code := b.wait(30 * time.Second); code != exitSignalBase+int(syscall.SIGINT) {
		t.Fatalf("run interrupted while waiting: exit %d, want %d; stderr:\n%s", code, exitSignalBase+int(syscall.SIGINT), b.stderr.String())
	}
	if n := strings.Count(b.stderr.String(), "waiting for k"); n != 1 {
		t.Errorf("run said %d times that it waits, want once:\n%s", n, b.stderr.String())
	}
	if fileExists(marker) {
		t.Error("the command ran without the lock")
	}
}

// TestTLS runs hold, status and doctor against TLS nodes with client certificates,
// given as rediss:// addresses.
func TestTLS(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 3, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired))
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL())
	}
	addrs := strings.Join(urls, ",")
	holder, _ := startHold(t, "--nodes", addrs, "tls")
	r := invoke(t, "", "status", "--nodes", addrs, "tls")
	if r.code != 0 || !strings.Contains(r.stdout, "tls: held") {
		t.Errorf("status over TLS: want the key held, got %v", r)
	}
	rep, r := doctorJSON(t, addrs)
	for _, n := range rep.Nodes {
		if !n.Reachable {
			t.Errorf("doctor over TLS: node %s unreachable: %+v\n%v", n.Addr, n.Checks, r)
		}
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold over TLS after SIGTERM: exit %d; stderr:\n%s", code, holder.stderr.String())
	}
}

// argsFor returns the arguments of a minimal call of cmd on key k: run's
// with a command ("true"), hold's and status's with the key alone, doctor's
// with none.
func argsFor(cmd string) []string {
	args := []string{cmd, "k", "--", "true"}
	switch cmd {
	case "hold", "status":
		args = args[:2]
	case "doctor":
		args = args[:1]
	}
	return args
}
