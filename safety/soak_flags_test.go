package safety_test

import (
	"os"
	"testing"
)

// TestSoakRejectsBadFlags runs this test binary's TestSoak and
// TestSoakClusters with a -soak that is not a positive duration: each must
// fail at once and name the flag. A zero ran a soak of chaos.Config's own
// default (5s), another than asked for, and passed; a negative duration failed
// with the harness's "chaos: negative count or duration", which names no
// flag, as TestSimulation refuses a -schedules below 1.
func TestSoakRejectsBadFlags(t *testing.T) {
	const child = "SAFETY_SOAK_FLAGS_CHILD"
	if os.Getenv(child) != "" {
		t.Skip("the child runs the soaks only")
	}
	for _, test := range []string{"TestSoak", "TestSoakClusters"} {
		for _, arg := range []string{"-soak=0", "-soak=-1s"} {
			expectFlagRefused(t, child, test, arg)
		}
	}
}
