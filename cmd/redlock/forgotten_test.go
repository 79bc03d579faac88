//go:build unix

package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestHoldTellsNodeThatForgotKey deletes a held lock's key on one node of
// three, as an eviction under maxmemory-policy allkeys-lru would, after an
// extension reached that node: the lock runs on, held by the other two, and
// hold said nothing, with or without -v, while one more failure would now
// lose it. It tells it now, once, without -v, and keeps the lock.
func TestHoldTellsNodeThatForgotKey(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "3s", "forgotten")
	defer holder.term()
	value := valueOf(t, servers, "forgotten")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// A node that holds the key and whose TTL was raised: an extension
	// reached it (every second), so hold knows it held the key.
	var victim int
	pttls := make([]int64, len(servers))
	for extended := false; !extended; {
		if ctx.Err() != nil {
			t.Fatalf("no node's TTL of the held key rose within 60s; stderr:\n%s", holder.stderr.String())
		}
		for i, s := range servers {
			v, _ := s.Do(ctx, "GET", "forgotten")
			p, _ := s.Do(ctx, "PTTL", "forgotten")
			ms, _ := p.(int64)
			if v == value && pttls[i] > 0 && ms > pttls[i] {
				victim, extended = i, true
				break
			}
			pttls[i] = ms
		}
		time.Sleep(20 * time.Millisecond)
	}
	deleteAndExpectTold(ctx, t, holder, servers[victim], "forgotten")
}

// deleteAndExpectTold deletes key on victim, a node that holds it for
// holder's lock, and waits until ctx ends for holder's line that the node
// no longer holds it; then holder must exit 0, the lock held on a quorum,
// having told it once, naming the node.
func deleteAndExpectTold(ctx context.Context, t *testing.T, holder *background, victim *redistest.Server, key string) {
	t.Helper()
	if _, err := victim.Do(ctx, "DEL", key); err != nil {
		t.Fatal(err)
	}
	said := "no longer holds " + key + ", which it held"
	for !strings.Contains(holder.stderr.String(), said) {
		if ctx.Err() != nil {
			t.Fatalf("hold did not say %q in time; stderr:\n%s", said, holder.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	holder.term()
	if holder.code != 0 {
		t.Fatalf("hold: exit %d, want 0: the lock held on a quorum; stderr:\n%s", holder.code, holder.stderr.String())
	}
	if n := strings.Count(holder.stderr.String(), said); n != 1 || !strings.Contains(holder.stderr.String(), victim.Addr()) {
		t.Errorf("want one line naming %s, got %d:\n%s", victim.Addr(), n, holder.stderr.String())
	}
}

// TestHoldTellsNodeThatForgotKeyBeforeAnExtension deletes a held lock's key
// on one node of three at once after the grant, before the first extension
// (every 2s with --ttl 6s), as an eviction would: SAFETY.md says such a loss
// "is seen only at the holder's next extension there; redlock run and hold
// then say so on stderr". hold knew only the nodes that had said yes to an
// extension, not those that had granted the lock, so a key lost before the
// first extension was never told, however long hold held the lock (that
// node's every extension said no). It is told now, at the next extension,
// once, without -v.
func TestHoldTellsNodeThatForgotKeyBeforeAnExtension(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "6s", "forgotten-early")
	defer holder.term()
	value := valueOf(t, servers, "forgotten-early")
	victim := -1
	for i, s := range servers {
		if v, _ := s.Do(t.Context(), "GET", "forgotten-early"); v == value {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatal("no node holds the key")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // three extensions at least
	defer cancel()
	deleteAndExpectTold(ctx, t, holder, servers[victim], "forgotten-early")
}

// TestHoldLostOnHalfOfFourNodes deletes a held lock's key on two nodes of
// four (quorum 3): the next extension finds it lost, and hold exits 76. Its
// line said "an extension found it gone from a quorum of the nodes", which
// two of four are not; it says now what the rule is: too many nodes for a
// quorum (more than N - quorum).
func TestHoldLostOnHalfOfFourNodes(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 4)
	holder, _ := startHold(t, "--nodes", addrs, "--ttl", "3s", "half")
	defer holder.term()
	for _, s := range servers[:2] {
		if _, err := s.Do(t.Context(), "DEL", "half"); err != nil {
			t.Fatal(err)
		}
	}
	if code := holder.wait(30 * time.Second); code != 76 {
		t.Fatalf("hold: exit %d, want 76; stderr:\n%s", code, holder.stderr.String())
	}
	if s := holder.stderr.String(); !strings.Contains(s, "an extension found it gone from too many nodes for a quorum") || strings.Contains(s, "a quorum of the nodes") {
		t.Errorf("want the loss told as the key gone from too many nodes for a quorum:\n%s", s)
	}
}

// TestForgottenKeyOnlyBeforeItsExpiry feeds the command's observer a node
// that said yes to an extension, then no: told when the no came before the
// key could expire there (ttl one hour), after the next extension that
// succeeded; not when it could have expired (ttl 1ns: the node may have
// missed extensions), nor when the extension found the lock lost (the loss
// is told instead).
func TestForgottenKeyOnlyBeforeItsExpiry(t *testing.T) {
	t.Parallel()
	ok := redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpExtend, OK: true}
	no := redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpExtend}
	votes := redlock.Votes{Nodes: 3, Quorum: 2, Granted: 2, Refused: 1}
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		lost bool
		want int
	}{
		{"before expiry", time.Hour, false, 1},
		{"after expiry", time.Nanosecond, false, 0},
		{"lock lost", time.Hour, true, 0},
	} {
		var stderr bytes.Buffer
		e := &lockEvents{ttl: tc.ttl, stderr: &stderr}
		e.NodeCall(context.Background(), ok)
		time.Sleep(time.Millisecond) // past the 1ns TTL
		d := redlock.ExtendDone{Key: "k", TTL: tc.ttl, Votes: votes, Until: time.Now().Add(tc.ttl)}
		if tc.lost {
			d.Votes, d.Lost, d.Err = redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3}, true, redlock.ErrLockLost
		}
		if got := noTwice(e, no, d, &stderr); got != tc.want {
			t.Errorf("%s: told %d times, want %d:\n%s", tc.name, got, tc.want, stderr.String())
		}
	}
}

// TestForgottenKeyAfterGrant feeds the command's observer a node that set
// the key in an attempt, then said no to extensions before the key could
// expire there: told when that attempt obtained the lock (its yes came
// before the grant, or after it, as a reply that comes once a quorum has
// decided), not when it failed (its keys were released: a no then says
// nothing).
func TestForgottenKeyAfterGrant(t *testing.T) {
	t.Parallel()
	set := redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpAcquire, OK: true}
	no := redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpExtend}
	votes := redlock.Votes{Nodes: 3, Quorum: 2, Granted: 2, Refused: 1}
	for _, tc := range []struct {
		name    string
		outcome redlock.Outcome
		late    bool // the SET's reply comes after the attempt's end
		want    int
	}{
		{"granted", redlock.OutcomeGranted, false, 1},
		{"granted, reply after the grant", redlock.OutcomeGranted, true, 1},
		{"not obtained", redlock.OutcomeNotObtained, false, 0},
		{"not obtained, reply after its end", redlock.OutcomeNotObtained, true, 0},
	} {
		var stderr bytes.Buffer
		e := &lockEvents{ttl: time.Hour, stderr: &stderr, firstDone: make(chan struct{})}
		ctx, end := e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: 1})
		if !tc.late {
			e.NodeCall(ctx, set)
		}
		end(redlock.AttemptDone{Key: "k", Attempt: 1, Outcome: tc.outcome, Votes: votes})
		if tc.late {
			e.NodeCall(ctx, set)
		}
		d := redlock.ExtendDone{Key: "k", TTL: time.Hour, Votes: votes, Until: time.Now().Add(time.Hour)}
		if got := noTwice(e, no, d, &stderr); got != tc.want {
			t.Errorf("%s: told %d times, want %d:\n%s", tc.name, got, tc.want, stderr.String())
		}
	}
}

// noTwice feeds e two extensions of the lock "k", each ending as d, of which
// node n1 said no (the call no), and returns how many times e has told, on
// stderr, that n1 no longer holds k.
func noTwice(e *lockEvents, no redlock.NodeCall, d redlock.ExtendDone, stderr *bytes.Buffer) int {
	for range 2 {
		e.NodeCall(context.Background(), no)
		_, end := e.Extend(context.Background(), redlock.ExtendStart{Key: d.Key, TTL: d.TTL})
		end(d)
	}
	return strings.Count(stderr.String(), "n1 no longer holds k")
}

// TestHoldTellsNodeThatRefusesLocks holds a lock on three nodes of which
// one is a replica: it answers READONLY, which retrying cannot fix, and the
// lock is held on the two others. hold said nothing of it without -v, and
// the set then tolerated no failure while the operator counted on one. It
// tells it now, once, through every driver.
func TestHoldTellsNodeThatRefusesLocks(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	host, port, _ := net.SplitHostPort(servers[0].Addr())
	if _, err := servers[2].Do(t.Context(), "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			holder, _ := startHold(t, "--driver", d, "--nodes", addrs, "refused-"+d)
			defer holder.term()
			said := "node " + servers[2].Addr() + " refuses every lock"
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(holder.stderr.String(), said) {
				if time.Now().After(deadline) {
					t.Fatalf("hold did not say %q within 30s; stderr:\n%s", said, holder.stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			holder.term()
			out := holder.stderr.String()
			if holder.code != 0 || strings.Count(out, said) != 1 || !strings.Contains(out, "READONLY") {
				t.Errorf("want exit 0 and one line naming READONLY, got exit %d:\n%s", holder.code, out)
			}
		})
	}
}

// TestRunTellsNodeWithoutIdentity runs as an ACL user without +info over
// three addresses of which two are one server (127.0.0.1:P and
// localhost:P): the Client cannot ask which server each is, takes them as
// distinct, and that server counts twice towards the quorum. run was
// granted and said nothing; it still runs CMD (the library's rule), and now
// says, once a node, that the nodes could not be told apart.
func TestRunTellsNodeWithoutIdentity(t *testing.T) {
	t.Parallel()
	const password = "noinfo-Passw0rd"
	servers, _ := nodes(t, 2)
	urls := setUser(t, servers, "noinfo", password, "-info")
	_, port, _ := net.SplitHostPort(servers[0].Addr())
	addrs := strings.Join(append(urls, "redis://noinfo:"+password+"@localhost:"+port), ",")
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			// CMD returns at once: the Client asks the nodes which server
			// they are in the background, and waits at its first grant
			// only for the nodes that answered that grant's round (and
			// 10ms more for the others), so a node whose SET reply came
			// after the quorum's may still be answering INFO when `true`
			// has returned and run closes the Client. Close waits for
			// that question, as for the node calls in flight, for at
			// most the node timeout (TestCloseWaitsForIdentityQuestionsInFlight),
			// which bounds the question itself: it is told all the same.
			// A node timeout of 2s rather than 200ms: a question that a
			// loaded machine under -race holds past the node timeout ends
			// by it, which is no refusal and is not told.
			r := invoke(t, "", "run", "--driver", d, "--nodes", addrs, "--node-timeout", "2s", "noinfo-"+d, "--", "true")
			if r.code != 0 {
				t.Fatalf("run: %v", r)
			}
			if n := strings.Count(r.stderr, "does not tell which server it is"); n != 3 || !strings.Contains(r.stderr, "NOPERM") || strings.Contains(r.stderr, password) {
				t.Errorf("want one line per node (3) naming NOPERM, no password; got %d:\n%s", n, r.stderr)
			}
		})
	}
}
