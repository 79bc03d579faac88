package benchrun

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// Env describes where and with what a run took place.
type Env struct {
	// Date is when the run started.
	Date time.Time
	// CPU is the processor as go test names it, or as /proc/cpuinfo does.
	CPU string
	// CPUs is the number of logical CPUs; GOMAXPROCS is the runtime's setting.
	CPUs, GOMAXPROCS int
	// OS and Arch are runtime.GOOS and runtime.GOARCH.
	OS, Arch string
	// Go is the toolchain version that built the benchmarks.
	Go string
	// Redis is the redis-server version.
	Redis string
	// Revision names the library's source: a commit, and whether code outside
	// bench/ had uncommitted changes.
	Revision string
	// Load is the system's load average (1, 5, 15 minutes) at the start and
	// at the end of the run, as /proc/loadavg gives it: a busy machine makes
	// every figure worse.
	LoadStart, LoadEnd string
	// Modules are the versions of the modules that matter (the clients and
	// the peers), by module path, as built into the benchmark binaries.
	Modules map[string]string
}

// reportedModules are the modules whose versions a report gives, in order.
var reportedModules = []string{
	"github.com/redis/go-redis/v9",
	"github.com/gomodule/redigo",
	"github.com/redis/rueidis",
	"github.com/valkey-io/valkey-go",
	"github.com/redis/rueidis/rueidiscompat",
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
}

// newEnv collects what can be known before the run.
func newEnv(dir string) Env {
	return Env{
		Date:       time.Now().UTC(),
		CPU:        procCPU(),
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Revision:   revision(dir),
		LoadStart:  loadAvg(),
		Modules:    make(map[string]string),
	}
}

// addBinary records the Go version that built the binary at path. (A test
// binary's build information has no module versions: see addModules.)
func (e *Env) addBinary(path string) {
	if info, err := buildinfo.ReadFile(path); err == nil {
		e.Go = info.GoVersion
	}
}

// addModules records the versions of reportedModules that the module in dir
// builds with, by asking the go command. A module that two builds use at
// different versions keeps both, joined by " / ".
func (e *Env) addModules(ctx context.Context, dir string) {
	args := append([]string{"list", "-m", "-e", "-f", "{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}"}, reportedModules...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return
	}
	for line := range strings.Lines(string(out)) {
		path, version, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || version == "" {
			continue
		}
		switch old := e.Modules[path]; {
		case old == "":
			e.Modules[path] = version
		case !strings.Contains(old, version):
			e.Modules[path] = old + " / " + version
		}
	}
}

// procCPU returns the model name in /proc/cpuinfo, or "".
func procCPU() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// revision names the checkout at dir: the short commit, and whether files
// outside bench/ differ from it.
func revision(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	rev := "commit " + strings.TrimSpace(string(out))
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--", ".", ":(exclude)bench").Output()
	switch {
	case err != nil:
	case len(strings.TrimSpace(string(status))) > 0:
		rev += ", with uncommitted changes outside bench/"
	default:
		rev += ", no uncommitted changes outside bench/"
	}
	return rev
}

// loadAvg returns the load averages in /proc/loadavg, or "unknown".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// redisVersion asks s for its version.
func redisVersion(ctx context.Context, s *redistest.Server) string {
	v, err := s.Do(ctx, "INFO", "server")
	if err != nil {
		return "unknown"
	}
	info, _ := v.(string)
	for line := range strings.Lines(info) {
		if ver, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return ver
		}
	}
	return "unknown"
}
