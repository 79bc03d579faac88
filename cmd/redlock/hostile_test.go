//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/go-redlock/redlock/internal/fakeredis"
)

// hostileText is what the hostile server puts in its replies: terminal
// control sequences (set the window title, clear the screen, red text), a
// carriage return that would hide the start of the line, and a C1 control
// (CSI, U+009B).
const hostileText = "\x1b]0;PWNED\x07\x1b[2J\x1b[31m\rhidden\u009b31m"

// hostileServer serves, on a loopback port, a server that answers AUTH,
// SELECT, CLIENT and PING as Redis does, HELLO with an error (RESP2), and
// every other command with reply; without one, INFO with a version that
// holds hostileText and every other command with an error that holds it: a
// malicious or broken server, or one behind a proxy that is. It returns the
// server's address.
func hostileServer(t *testing.T, reply string) string {
	t.Helper()
	id := hostileServers.Add(1) // run_id: tells the servers apart (doctor)
	return fakeredis.Serve(t, func(args []string) string {
		switch cmd := strings.ToUpper(args[0]); {
		case reply != "" && cmd != "HELLO" && cmd != "AUTH" && cmd != "SELECT" && cmd != "CLIENT" && cmd != "PING":
			return reply
		case cmd == "HELLO":
			return "-ERR unknown command 'HELLO'\r\n"
		case cmd == "AUTH", cmd == "SELECT", cmd == "CLIENT":
			return "+OK\r\n"
		case cmd == "PING":
			return "+PONG\r\n"
		case cmd == "INFO":
			body := fmt.Sprintf("# Server\r\nredis_version:7.0.0%s\r\nrun_id:hostile-%d\r\n", hostileText, id)
			return fmt.Sprintf("$%d\r\n%s\r\n", len(body), body)
		default:
			return "-ERR boom " + hostileText + "\r\n"
		}
	})
}

// hostileServers counts the hostile servers made, for their run_ids.
var hostileServers atomic.Int64

// terminalControls returns the characters of s that a terminal would act on
// rather than show: C0 controls but the newline and the tab, DEL, C1
// controls, and bytes that are not UTF-8.
func terminalControls(s string) []string {
	var found []string
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"),
			r < 0x20 && r != '\n' && r != '\t', r == 0x7f, 0x80 <= r && r <= 0x9f:
			found = append(found, strconv.QuoteRune(r))
		}
	}
	return found
}

// TestHostileServerTextIsEscaped: the text of a server's replies (its errors,
// its INFO) reaches the terminal escaped, in the messages of run and hold (-v
// included), in status's table and in doctor's report: a server cannot set
// the terminal's title, clear it, color it or hide a line with a carriage
// return. The text is still there, escaped as Go quotes it.
func TestHostileServerTextIsEscaped(t *testing.T) {
	t.Parallel()
	addr := hostileServer(t, "")
	for _, args := range [][]string{
		{"run", "--nodes", addr, "--wait", "0", "k", "--", "true"},
		{"hold", "-v", "--nodes", addr, "--wait", "0", "k"},
		{"status", "--nodes", addr, "k"},
		{"doctor", "--timeout", "5s", "--nodes", addr},
	} {
		r := invoke(t, "", args...)
		if r.code == 0 {
			t.Errorf("%s against the hostile server: exit 0, want a failure:\n%v", args[0], r)
		}
		for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			if c := terminalControls(out); len(c) > 0 {
				t.Errorf("%s's %s has terminal controls %v from the server's replies:\n%q", args[0], name, c, out)
			}
		}
		if all := r.stdout + r.stderr; !strings.Contains(all, `\x1b]0;PWNED\a`) {
			t.Errorf("%s does not show the server's text escaped:\n%q", args[0], all)
		}
	}
}

// TestHostileHugeReplyCostsOneNode: a node whose replies announce an array
// of four billion elements (thirteen bytes) is one failed node for run,
// status and doctor, which go on with the others. Before respguard, each of
// them died of "fatal error: runtime: out of memory" (exit 2, as for bad
// flags), the lock of run untaken.
func TestHostileHugeReplyCostsOneNode(t *testing.T) {
	t.Parallel()
	hostile := hostileServer(t, "*4000000000\r\n")
	_, good := nodes(t, 2)
	addrs := hostile + "," + good
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--driver", "goredis", "--nodes", addrs, "--wait", "0", "k", "--", "true"}, 0},
		{[]string{"status", "--nodes", addrs, "k"}, 0},
		{[]string{"doctor", "--timeout", "5s", "--nodes", addrs}, exitFailure},
	} {
		r := invoke(t, "", tc.args...)
		if r.code != tc.code || strings.Contains(r.stderr, "fatal error") || !strings.Contains(r.stdout+r.stderr, "redis reply refused") && tc.args[0] != "run" {
			t.Errorf("%s with one node of three answering *4000000000: want exit %d and the node's reply refused, got %v", tc.args[0], tc.code, r)
		}
	}
}

// TestHostileServerTextInJSON: --json of status and doctor gives a server's
// text as it is to a program, and nothing a terminal acts on to a person
// who looks at it: encoding/json escapes the C0 controls but writes the C1
// ones (U+009B is CSI) raw, so the command escapes those too. The same for
// hold's line, whose key may hold one.
func TestHostileServerTextInJSON(t *testing.T) {
	t.Parallel()
	addr := hostileServer(t, "")
	for _, args := range [][]string{
		{"status", "--json", "--nodes", addr, "k"},
		{"doctor", "--json", "--timeout", "5s", "--nodes", addr},
	} {
		r := invoke(t, "", args...)
		if c := terminalControls(r.stdout); len(c) > 0 {
			t.Errorf("%s --json has terminal controls %v from the server's replies:\n%q", args[0], c, r.stdout)
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%s --json: not JSON: %v\n%s", args[0], err, r.stdout)
		}
		if text := fmt.Sprint(v); !strings.Contains(text, hostileText) {
			t.Errorf("%s --json does not give the server's text as it is: %s", args[0], text)
		}
	}

	_, good := nodes(t, 1)
	const key = "csi\u009b31m-key"
	r := invoke(t, "", "hold", "--nodes", good, "--for", "1ms", key)
	var line holdLine
	if err := json.Unmarshal([]byte(r.stdout), &line); err != nil || r.code != 0 || line.Key != key {
		t.Errorf("hold with a key that holds U+009B: want exit 0 and the key in its line, got %+v (%v)\n%v", line, err, r)
	}
	if c := terminalControls(r.stdout); len(c) > 0 {
		t.Errorf("hold's line has terminal controls %v: %q", c, r.stdout)
	}
}

func TestEscapeC1(t *testing.T) {
	for _, s := range []string{"", "plain", "\u0080\u009f\u009b", "a\u00a0b\u0085c", "é\u009bñ", hostileText} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		e := escapeC1(b)
		var back string
		if err := json.Unmarshal(e, &back); err != nil || back != s {
			t.Errorf("escapeC1(%s) = %s: decodes to %q (%v), want %q", b, e, back, err, s)
		}
		if c := terminalControls(string(e)); len(c) > 0 {
			t.Errorf("escapeC1(%s) = %s: still has %v", b, e, c)
		}
	}
}
