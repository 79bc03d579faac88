//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// binary is the redlock command built once for the tests, which drive it as
// a user would.
var binary string

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "count-sigint":
		os.Exit(countSIGINT())
	case "count-sigint-own-group": // as timeout(1) does
		if err := syscall.Setpgid(0, 0); err != nil {
			os.Exit(1)
		}
		os.Exit(countSIGINT())
	case "exec-default-signals":
		os.Exit(execDefaultSignals(os.Args[1:]))
	}
	os.Exit(buildAndRun(m))
}

// helperEnv makes the test binary a helper command rather than run the tests.
const helperEnv = "REDLOCK_CMD_TEST_HELPER"

// countSIGINT is the test binary as a command that writes "ready" and then
// "INT" for every SIGINT it gets to the file $LOG, for 1.5s.
func countSIGINT() int {
	log, err := os.OpenFile(os.Getenv("LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 1
	}
	defer log.Close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT)
	log.WriteString("ready\n")
	over := time.After(1500 * time.Millisecond)
	for {
		select {
		case <-sigs:
			log.WriteString("INT\n")
		case <-over:
			return 0
		}
	}
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redlock-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
		// A binary built with -race sleeps a second before it exits
		// (GORACE's atexit_sleep_ms, 1000 by default, whenever it has
		// more than one thread, as every Go program has): a second for
		// each of the hundreds of runs of the binary (and of this test
		// binary as a helper command) that the tests make, for nothing
		// they check. The races a run meets are still reported, and
		// still make it exit 66: the race runtime waits for the reports
		// under way before it exits, with or without the sleep. A
		// GORACE that sets the sleep itself is kept.
		if err := os.Setenv("GORACE", withoutExitSleep(os.Getenv("GORACE"))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// go test puts its GOROOT/bin first on PATH.
	build := exec.Command("go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// withoutExitSleep returns the GORACE options gorace with atexit_sleep_ms=0
// added, unless they set atexit_sleep_ms already.
func withoutExitSleep(gorace string) string {
	for opt := range strings.FieldsSeq(gorace) {
		if strings.HasPrefix(opt, "atexit_sleep_ms=") {
			return gorace
		}
	}
	return strings.TrimSpace(gorace + " atexit_sleep_ms=0")
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// command returns the binary with args, its environment without any
// REDLOCK_ variable so that only the test's flags and variables count.
func command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// invoke runs the binary with args and stdin, bounded by a minute, and
// returns what it did.
func invoke(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return invokeEnv(t, nil, stdin, args...)
}

// invokeEnv is invoke with the environment variables env ("NAME=value")
// added.
func invokeEnv(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = shellStatus(ee)
	case err != nil:
		t.Fatalf("redlock %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("redlock %s did not finish within a minute:\n%v", strings.Join(args, " "), r)
	}
	return r
}

// background is the binary running in the background; its stdout is read
// line by line.
type background struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	stderr syncBuffer
	done   chan struct{}
	code   int
}

// start starts the binary with args in the background, in a process group
// of its own, which the test kills at its end if the binary still runs.
func start(t *testing.T, args ...string) *background {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with the environment variables env added.
func startEnv(t *testing.T, env []string, args ...string) *background {
	t.Helper()
	b := &background{t: t, lines: make(chan string, 100), done: make(chan struct{})}
	b.cmd = command(context.Background(), args...)
	b.cmd.Env = append(b.cmd.Env, env...)
	b.cmd.Stderr = &b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	b.cmd.Stdout = pw
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		io.Copy(io.Discard, pr)
		close(b.lines)
	}()
	go func() {
		// Wait stops copying stdout at most WaitDelay after the binary exits,
		// even if its command left a process behind that holds stdout open.
		err := b.cmd.Wait()
		pw.Close()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			b.code = shellStatus(ee)
		} else if err != nil {
			b.code = -1
		}
		close(b.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // the binary and its command
		<-b.done
	})
	return b
}

// shellStatus is the status of the binary as a shell reports it: its exit
// code, or 128 + N when signal N ended it (as run ends by the SIGINT,
// SIGTERM or SIGHUP that ended its wait or killed its command).
func shellStatus(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ee.ExitCode()
}

// syncBuffer is a buffer safe for concurrent use: internal/syncbuf's.
type syncBuffer = syncbuf.Buffer

// waitLine waits up to d for the next line of stdout to be want.
func (b *background) waitLine(want string, d time.Duration) {
	b.t.Helper()
	select {
	case line, ok := <-b.lines:
		if !ok {
			b.wait(10 * time.Second)
			b.t.Fatalf("stdout ended before %q; exit %d, stderr:\n%s", want, b.code, b.stderr.String())
		}
		if line != want {
			b.t.Fatalf("stdout line %q, want %q", line, want)
		}
	case <-time.After(d):
		b.t.Fatalf("no %q on stdout within %v", want, d)
	}
}

// wait waits up to d for the binary to exit and returns its exit code.
func (b *background) wait(d time.Duration) int {
	b.t.Helper()
	select {
	case <-b.done:
		return b.code
	case <-time.After(d):
		b.t.Fatalf("still running after %v; stderr:\n%s", d, b.stderr.String())
		return 0
	}
}

// nodes starts n redis-server processes and returns them and the value of
// --nodes that names them.
func nodes(t *testing.T, n int, opts ...redistest.Option) ([]*redistest.Server, string) {
	t.Helper()
	servers := redistest.NewServers(t, n, opts...)
	return servers, strings.Join(redistest.Addrs(servers), ",")
}

// tlsNodes starts n redis-server processes, which speak plaintext, and
// returns them and their addresses as rediss:// nodes: the servers do not
// answer the TLS handshake of a client that dials those.
func tlsNodes(t *testing.T, n int) ([]*redistest.Server, []string) {
	t.Helper()
	servers, _ := nodes(t, n)
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = "rediss://" + s.Addr()
	}
	return servers, urls
}

// haveRedisServer reports whether redis-server can be run, as redistest
// finds it.
func haveRedisServer() bool {
	if os.Getenv("REDISTEST_SERVER") != "" {
		return true
	}
	_, err := exec.LookPath("redis-server")
	return err == nil
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "demo", "run", "hold", "status", "doctor", "completion", "completion bash", "completion zsh", "completion fish"} {
		args := append(strings.Fields(sub), "--help")
		r := invoke(t, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("redlock %s --help: want exit 0 and examples, got %v", sub, r)
		}
	}
	if r := invoke(t, "", "help", "run"); r.code != 0 || !strings.Contains(r.stdout, "--conflict-exit-code") {
		t.Errorf("redlock help run: want exit 0 and run's help, got %v", r)
	}
	r := invoke(t, "", "run", "--help")
	for _, want := range []string{"69", "75", "76", "REDLOCK_TOKEN", "--grace", "--wait", "--conflict-exit-code", "--prefix", "--verbose", "REDLOCK_TTL", "REDLOCK_WAIT", "REDLOCK_PREFIX"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("redlock run --help does not mention %s:\n%s", want, r.stdout)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"bench, moved to the bench module", []string{"bench"}, "cd bench && go run ./cmd/benchrun"},
		{"chaos, moved to the safety module", []string{"chaos", "--duration", "1s"}, "cd safety && go run ./cmd/chaos"},
		{"unknown help topic", []string{"help", "frobnicate"}, "unknown help topic"},
		{"help topic with an extra word", []string{"help", "run", "extra"}, `unknown help topic "run extra"`},
		{"help topic with an extra word after a subcommand's", []string{"help", "completion", "bash", "extra"}, `unknown help topic "completion bash extra"`},
		{"--version with an argument", []string{"--version", "extra"}, `--version takes no arguments, got "extra"`},
		{"unknown flag", []string{"run", "--frob", "--key", "k", "--", "true"}, "unknown flag"},
		{"no nodes", []string{"run", "--key", "k", "--", "true"}, "no nodes"},
		{"no key", []string{"run", "--nodes", "127.0.0.1:1"}, "no key"},
		{"flag after KEY", []string{"run", "--nodes", "127.0.0.1:1", "k", "--wait", "0", "--", "true"}, `"--wait" after KEY: run's flags go before KEY`},
		{"empty key", []string{"run", "--nodes", "127.0.0.1:1", "", "--", "true"}, `run: the key is empty ("")`},
		// The "--" meant for CMD before KEY: CMD's first word would be the
		// key, and "sudo ./job" would run ./job without sudo.
		{"-- before KEY", []string{"run", "--nodes", "127.0.0.1:1", "--", "sh", "-c", "echo hi"}, `run: no KEY before --: "sh" would be taken for the key`},
		{"-- before KEY, one word", []string{"run", "--nodes", "127.0.0.1:1", "--", "true"}, `run: no KEY before --: "true"`},
		{"hold with an empty key", []string{"hold", "--nodes", "127.0.0.1:1", ""}, `hold: the key is empty ("")`},
		{"hold without a key", []string{"hold", "--nodes", "127.0.0.1:1"}, "one key"},
		{"hold with two keys", []string{"hold", "--nodes", "127.0.0.1:1", "a", "b"}, "one key"},
		{"hold --for 0", []string{"hold", "--nodes", "127.0.0.1:1", "--for", "0s", "a"}, "--for"},
		{"status without a key", []string{"status", "--nodes", "127.0.0.1:1"}, "no key"},
		{"status with an empty key", []string{"status", "--nodes", "127.0.0.1:1", ""}, "empty"},
		{"status without nodes", []string{"status", "k"}, "no nodes"},
		{"bad conflict code", []string{"run", "--conflict-exit-code", "-1", "--nodes", "127.0.0.1:1", "k", "--", "true"}, "conflict-exit-code"},
		{"no command", []string{"run", "--nodes", "127.0.0.1:1", "--key", "k"}, "no command"},
		{"bad address", []string{"run", "--nodes", "redis://u:hunter2@host:99999", "--key", "k", "--", "true"}, "port"},
		{"memory driver", []string{"run", "--driver", "memory", "--nodes", "a", "--key", "k", "--", "true"}, "memory"},
		{"unknown driver", []string{"run", "--driver", "nope", "--nodes", "127.0.0.1:1", "--key", "k", "--", "true"}, "unknown driver"},
		{"bad ttl", []string{"run", "--ttl", "-1s", "--nodes", "127.0.0.1:1", "--key", "k", "--", "true"}, "run: --ttl -1s is not positive"},
		{"doctor without nodes", []string{"doctor"}, "no nodes"},
		{"doctor bad address", []string{"doctor", "--nodes", "redis://u:hunter2@[::1"}, "malformed"},
		// run, hold and status refuse a key no lock can take; doctor
		// reported its permissions and writes on it as ok.
		{"status over more nodes than a Client takes", []string{"status", "--timeout", "200ms", "--nodes", strings.Join(redistest.ClosedAddrs(t, redlock.MaxNodes+1), ","), "k"}, "status: 65 nodes are more than 64"},
		{"doctor --key longer than a lock's key", []string{"doctor", "--nodes", "127.0.0.1:1", "--key", strings.Repeat("k", redlock.MaxKeyLen+1)}, "doctor: key of 4097 bytes (prefix included) is longer than 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, "", tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("redlock %s: want exit 2 and %q on stderr, got %v", strings.Join(tc.args, " "), tc.want, r)
			}
			if strings.Contains(r.stdout+r.stderr, "hunter2") {
				t.Errorf("redlock %s printed the password:\n%v", strings.Join(tc.args, " "), r)
			}
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
