//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestUsageErrorsNameSubcommand: every usage error of a subcommand begins
// "redlock: SUBCOMMAND: ", as their other errors do, and one about the TTL or
// the node timeout names the flag. The TTL's and the node timeout's (the
// library's words, "redlock: TTL 0s is not positive"), an address's that does
// not parse, two addresses of one node, "no nodes", an unknown flag and
// completion's unknown shell said no subcommand, and an argument that demo,
// doctor or completion bash does not take "redlock: redlock demo takes no
// arguments".
func TestUsageErrorsNameSubcommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--nodes", "127.0.0.1:1", "--ttl", "0", "k", "--", "true"}, "run: --ttl 0s is not positive"},
		{[]string{"hold", "--nodes", "127.0.0.1:1", "--ttl", "0", "k"}, "hold: --ttl 0s is not positive"},
		{[]string{"run", "--nodes", "127.0.0.1:1", "--ttl", "25h", "k", "--", "true"}, "run: --ttl 25h0m0s is longer than 24h0m0s"},
		{[]string{"run", "--nodes", "127.0.0.1:1", "--ttl", "1ms", "k", "--", "true"}, "run: TTL 1ms is too small"},
		{[]string{"run", "--nodes", "127.0.0.1:1", "--node-timeout", "-1s", "k", "--", "true"}, "run: --node-timeout -1s is negative"},
		{[]string{"run", "--nodes", "127.0.0.1:1", "--node-timeout", "1ns", "k", "--", "true"}, "run: --node-timeout 1ns is shorter than 100µs: no node answers that fast"},
		{[]string{"hold", "--nodes", "127.0.0.1:1", "--node-timeout", "10us", "k"}, "hold: --node-timeout 10µs is shorter than 100µs"},
		{[]string{"hold", "--nodes", "127.0.0.1:1", "--node-timeout", "20s", "k"}, "hold: --node-timeout 20s is not smaller than --ttl 10s"},
		{[]string{"run", "--nodes", "bad:addr:x", "k", "--", "true"}, "run: address 1: "},
		{[]string{"hold", "--nodes", "127.0.0.1:1,127.0.0.1:1", "k"}, "hold: nodes 1 and 2 are both 127.0.0.1:1"},
		{[]string{"run", "--nodes", "redis://u:p,w@127.0.0.1:1", "k", "--", "true"}, "run: address 1: "},
		{[]string{"run", "k", "--", "true"}, "run: no nodes"},
		{[]string{"hold", "k"}, "hold: no nodes"},
		{[]string{"status", "k"}, "status: no nodes"},
		{[]string{"doctor"}, "doctor: no nodes"},
		{[]string{"doctor", "extra"}, `doctor: takes no arguments, got ["extra"]`},
		{[]string{"demo", "extra"}, `demo: takes no arguments, got ["extra"]`},
		// Each names the flag at fault: "--nodes, --contenders and
		// --duration must be positive" named all three.
		{[]string{"demo", "--nodes", "0"}, "demo: --nodes 0 is not positive"},
		{[]string{"demo", "--contenders", "0"}, "demo: --contenders 0 is not positive"},
		{[]string{"demo", "--duration", "-1s"}, "demo: --duration -1s is not positive"},
		{[]string{"completion", "nosuch"}, `completion: unknown shell "nosuch"`},
		{[]string{"completion", "bash", "extra"}, `completion bash: takes no arguments, got ["extra"]`},
		{[]string{"status", "--ttl", "1s", "k"}, "status: unknown flag: --ttl"},
		{[]string{"run", "--frob", "k", "--", "true"}, "run: unknown flag: --frob"},
	} {
		r := invoke(t, "", c.args...)
		if want := "redlock: " + c.want; r.code != exitUsage || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("redlock %s: want exit 2 and stderr beginning %q, got %v", strings.Join(c.args, " "), want, r)
		}
	}
}

// TestEnvUsageErrorsNameSubcommand: a REDLOCK_ variable the flag does not
// accept is a usage error that begins with the subcommand's name, as every
// other usage error of the subcommand does (TestUsageErrorsNameSubcommand),
// not with the variable's alone.
func TestEnvUsageErrorsNameSubcommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"REDLOCK_VERBOSE=yes", []string{"run", "--nodes", "127.0.0.1:1", "k", "--", "true"}, `run: REDLOCK_VERBOSE="yes": not a valid value for --verbose`},
		{"REDLOCK_FENCING=maybe", []string{"hold", "--nodes", "127.0.0.1:1", "k"}, `hold: REDLOCK_FENCING="maybe": not a valid value for --fencing`},
		{"REDLOCK_JSON=maybe", []string{"status", "--nodes", "127.0.0.1:1", "k"}, `status: REDLOCK_JSON="maybe": not a valid value for --json`},
		{"REDLOCK_MAX_SKEW=1", []string{"doctor", "--nodes", "127.0.0.1:1"}, `doctor: REDLOCK_MAX_SKEW="1": not a valid value for --max-skew`},
	} {
		r := invokeEnv(t, []string{c.env}, "", c.args...)
		if want := "redlock: " + c.want; r.code != exitUsage || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%s redlock %s: want exit 2 and stderr beginning %q, got %v", c.env, strings.Join(c.args, " "), want, r)
		}
	}
}
