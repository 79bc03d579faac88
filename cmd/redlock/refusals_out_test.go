//go:build unix

package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/testproxy"
)

// TestRunStopsAtRefusalsBesideNodeDown runs run as an ACL user that may not
// touch the key, on three nodes of which one is down (its port closed: the
// connection is refused at once: refusingAddr) and one far (its replies 50ms late, through
// a proxy). The down node's error and the near node's NOPERM decided each
// attempt before the far node's NOPERM came, so run waited until --wait
// ended and exited 69, "too many nodes failed for a quorum", with --wait 0
// too, though the nodes refuse the user, which run's help gives 1. Since
// c510a16 an attempt waits for that refusal: run exits 1 at once, naming
// NOPERM, whatever --wait.
//
// The far node's refusal counts only if it comes within the node timeout:
// an attempt waits that long for the replies still out (waitRefusals), and
// a node slower than that counts as failed, which is no refusal. So
// --node-timeout is 2s, well above the proxy's 50ms on a loaded machine:
// with the default (200ms), --wait 0 exited 69 in 2 of 120 runs with -race
// under a load of about 10, the far node's reply not in by then.
func TestRunStopsAtRefusalsBesideNodeDown(t *testing.T) {
	t.Parallel()
	const password = "nokey-Passw0rd"
	servers, _ := nodes(t, 2)
	urls := setUser(t, servers, "nokey", password, "resetkeys", "~other:*")
	far := testproxy.New(t, servers[1].Addr(), testproxy.ReplyDelay(50*time.Millisecond))
	urls = []string{
		"redis://nokey:" + password + "@" + refusingAddr(t),
		urls[0],
		strings.Replace(urls[1], servers[1].Addr(), far.Addr(), 1),
	}
	for _, d := range []string{"goredis", "redigo", "rueidis"} {
		for _, wait := range []string{"10s", "0"} {
			r := invoke(t, "", "run", "--driver", d, "--wait", wait, "--node-timeout", "2s", "--nodes", strings.Join(urls, ","), "k-"+d, "--", "true")
			if r.code != exitFailure || !strings.Contains(r.stderr, "the nodes answer an error that retrying cannot fix") ||
				!strings.Contains(r.stderr, "2 answered NOPERM, which retrying cannot fix") {
				t.Errorf("run --driver %s --wait %s as a user the nodes refuse, one node down: want exit 1 at once, naming NOPERM, got %v", d, wait, r)
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Errorf("run printed the password:\n%v", r)
			}
		}
	}
}

// refusingAddr returns a loopback address whose port is bound, until the
// test ends, by a socket that never listens: a connection to it is refused
// at once, as to a node that is down, and no server started meanwhile, by
// this test binary or by another, can take the port. One of
// redistest.ClosedAddrs is free once it returns: a redis-server that
// another test binary started took it during the test (1 of 100 runs, two
// test binaries at once under a load of about 13), and the "down" node
// answered WRONGPASS.
func refusingAddr(t *testing.T) string {
	t.Helper()
	syscall.ForkLock.RLock() // no command started meanwhile inherits it
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
}
