package safety_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSimulationRejectsBadFlags runs this test binary's TestSimulation with a
// count that runs nothing: it must fail and say why, not pass with
// "SIM: -5 schedules, 0 grants ...", a run that checked nothing; and with a
// negative -sim.workers or -sim.reports, which it ran as if they had not been
// given (GOMAXPROCS workers; no report).
func TestSimulationRejectsBadFlags(t *testing.T) {
	const child = "SAFETY_SIM_FLAGS_CHILD"
	if os.Getenv(child) != "" {
		t.Skip("the child runs TestSimulation only")
	}
	for _, arg := range []string{"-schedules=-5", "-schedules=0", "-sim.repeat=0", "-sim.repeat=-2", "-sim.workers=-1", "-sim.reports=-1"} {
		expectFlagRefused(t, child, "TestSimulation", arg)
	}
}

// expectFlagRefused runs this test binary again, with the environment
// variable child set (the calling test skips there), to run test alone with
// arg, a flag of the form -name=value: the run must fail and name -name.
func expectFlagRefused(t *testing.T, child, test, arg string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$", "-test.count=1", arg)
	cmd.Env = append(os.Environ(), child+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("%s %s passed; want a failure that names the flag\n%s", test, arg, out)
		return
	}
	name, _, _ := strings.Cut(arg, "=")
	if !strings.Contains(string(out), name) {
		t.Errorf("%s %s failed without naming %s:\n%s", test, arg, name, out)
	}
}
