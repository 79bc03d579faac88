//go:build race

package safety_test

// defaultSchedules is TestSimulation's default under the race detector,
// which makes a schedule about ten times as costly.
const defaultSchedules = 100
