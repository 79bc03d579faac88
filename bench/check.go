package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkTimeout bounds the child process of CheckBenchmarks.
const checkTimeout = 10 * time.Minute

// CheckBenchmarks runs every benchmark of the test binary it is called from
// once (-test.benchtime 1x), in a child process, and fails t with the child's
// output if any benchmark fails or none ran. It lets `go test ./...` keep
// every benchmark compiling and working without asserting any figure:
//
//	func TestBenchmarks(t *testing.T) { bench.CheckBenchmarks(t) }
//
// The child inherits the environment (with a Scale case of 200 locks held
// for 1s unless ScaleLocksEnv and ScaleForEnv say otherwise), so it starts its own servers unless
// AddrsEnv is set, and skips or fails without redis-server as the tests do.
func CheckBenchmarks(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the benchmarks are not run")
	}
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^$", "-test.bench=.", "-test.benchtime=1x", "-test.benchmem", "-test.count=1",
		"-test.timeout="+checkTimeout.String())
	// The Scale case, small: the point is that it runs.
	cmd.Env = os.Environ()
	for env, v := range map[string]string{ScaleLocksEnv: "200", ScaleForEnv: "1s"} {
		if os.Getenv(env) == "" {
			cmd.Env = append(cmd.Env, env+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	if err != nil {
		t.Fatalf("the benchmarks failed (%v):\n%s", err, text)
	}
	ran := benchLine.FindAllString(text, -1)
	if len(ran) == 0 {
		if strings.Contains(text, "--- SKIP") {
			t.Skipf("every benchmark skipped:\n%s", text)
		}
		t.Fatalf("no benchmark ran:\n%s", text)
	}
	t.Logf("%d benchmarks ran once each", len(ran))
}

// benchLine matches the result line of one benchmark.
var benchLine = regexp.MustCompile(`(?m)^Benchmark\S+\s+\d+\s+[\d.]+ ns/op`)
