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
	if os.Getenv("SAFETY_SIM_FLAGS_CHILD") != "" {
		t.Skip("the child runs TestSimulation only")
	}
	for _, args := range [][]string{{"-schedules=-5"}, {"-schedules=0"}, {"-sim.repeat=0"}, {"-sim.repeat=-2"}, {"-sim.workers=-1"}, {"-sim.reports=-1"}} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], append([]string{"-test.run=^TestSimulation$", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), "SAFETY_SIM_FLAGS_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("TestSimulation %v passed; want a failure that names the flag\n%s", args, out)
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(args[0], "-"), "=")
		if !strings.Contains(string(out), "-"+name) {
			t.Errorf("TestSimulation %v failed without naming -%s:\n%s", args, name, out)
		}
	}
}
