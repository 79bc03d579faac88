//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// run --key "" (a variable that was empty, say) is an empty key, a usage
// error, as an empty positional KEY is: run took it for no --key, so the
// first word of CMD became the key and the rest CMD: with --key "",
// "-- echo hi" locked "echo" and ran "hi" (exit 127), "-- true" said "no
// command", and "-- echo echo" would lock "echo" and run echo.
func TestReviewEmptyKeyFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--nodes", "127.0.0.1:1", "--wait", "0", "--key", "", "--", "echo", "hi"},
		{"run", "--nodes", "127.0.0.1:1", "--wait", "0", "--key=", "--", "echo", "echo"},
		{"run", "--nodes", "127.0.0.1:1", "--key", "", "--", "true"},
	} {
		r := invoke(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--key is empty") {
			t.Errorf("redlock %q: want exit 2 and '--key is empty' on stderr, got %v", args, r)
		}
	}
}

// status --json gives a key that is not UTF-8, which a JSON string cannot
// hold, in key_quoted too, quoted as Go quotes it: "key" alone has its bad
// bytes as U+FFFD, so that two such keys came out the same ("\ufffd" for
// both "\xff" and "\xfe"), against "--json gives every key as it is". The
// nodes need not answer: the report names the keys all the same.
func TestReviewStatusJSONKeyNotUTF8(t *testing.T) {
	t.Parallel()
	keys := []string{"\xff", "\xfe", "plain"}
	r := invoke(t, "", append([]string{"status", "--json", "--timeout", "100ms", "--nodes", "127.0.0.1:1"}, keys...)...)
	var rep struct {
		Keys []struct {
			Key       string `json:"key"`
			KeyQuoted string `json:"key_quoted"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Keys) != len(keys) {
		t.Fatalf("status --json: %v\n%v", err, r)
	}
	for i, want := range []string{`"\xff"`, `"\xfe"`, ""} {
		if got := rep.Keys[i].KeyQuoted; got != want {
			t.Errorf("status --json: key_quoted of %q is %q, want %q", keys[i], got, want)
		}
	}
}

// doctor's --ttl is "the TTL your locks use": one that run, hold and the
// library refuse (longer than redlock.MaxTTL, or not above its drift
// allowance) is a usage error, as it is for them. doctor took --ttl 25h and
// --ttl 1ms, checked the nodes and gave advice for locks no client can take.
func TestReviewDoctorTTLLimits(t *testing.T) {
	t.Parallel()
	for _, ttl := range []string{"25h", "1ms", "2ms"} {
		r := invoke(t, "", "doctor", "--nodes", "127.0.0.1:1", "--timeout", "100ms", "--ttl", ttl)
		if r.code != exitUsage || !strings.Contains(r.stderr, "doctor: --ttl ") {
			t.Errorf("redlock doctor --ttl %s: want exit 2 naming --ttl, got %v", ttl, r)
		}
		if r := invoke(t, "", "hold", "--nodes", "127.0.0.1:1", "--ttl", ttl, "k"); r.code != exitUsage {
			t.Errorf("redlock hold --ttl %s: want exit 2, as doctor's, got %v", ttl, r)
		}
	}
}

// doctor fails the set's count when it has more nodes than a Client takes
// (redlock.MaxNodes), which run and hold refuse ("65 nodes are more than
// 64"): it said "ok  count  65 nodes, quorum 33: tolerates 32 failed
// nodes". The nodes need not answer.
func TestReviewDoctorTooManyNodes(t *testing.T) {
	t.Parallel()
	addrs := make([]string, redlock.MaxNodes+1)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", i+1)
	}
	r := invoke(t, "", "doctor", "--json", "--timeout", "100ms", "--nodes", strings.Join(addrs, ","))
	var rep struct {
		Checks []struct{ Name, Status, Message string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%v", err, r)
	}
	for _, c := range rep.Checks {
		if c.Name == "count" {
			if c.Status != "fail" || !strings.Contains(c.Message, "more than 64") {
				t.Errorf("doctor's count of %d nodes: %s %q, want fail, saying more than 64", len(addrs), c.Status, c.Message)
			}
			return
		}
	}
	t.Errorf("doctor --json has no count check:\n%v", r)
}
