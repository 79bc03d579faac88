package bench

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// AddrsEnv names the environment variable that gives the suite running
// redis-server processes to use instead of starting its own: comma-separated
// loopback "host:port" addresses, at least five. The runner sets it so that
// all its runs share five servers.
const AddrsEnv = "REDLOCK_BENCH_ADDRS"

// Servers returns the addresses of n independent redis-server processes: the
// first n of AddrsEnv when it is set, or else n servers that it starts with
// redistest and that are stopped when b ends. Without redis-server it skips b,
// or fails it when the CI environment variable is set.
func Servers(b testing.TB, n int) []string {
	b.Helper()
	if env := os.Getenv(AddrsEnv); env != "" {
		addrs, err := parseAddrs(env)
		if err != nil {
			b.Fatal(err)
		}
		if len(addrs) < n {
			b.Fatalf("bench: %s has %d addresses, need %d", AddrsEnv, len(addrs), n)
		}
		return addrs[:n]
	}
	return redistest.Addrs(redistest.NewServers(b, n))
}

// parseAddrs splits and checks the value of AddrsEnv: only loopback
// addresses, since a benchmark floods what it is pointed at.
func parseAddrs(env string) ([]string, error) {
	var addrs []string
	for a := range strings.SplitSeq(env, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", AddrsEnv, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("bench: %s: %s is not a loopback address", AddrsEnv, a)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}
