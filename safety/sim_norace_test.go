//go:build !race

package safety_test

// defaultSchedules is how many schedules TestSimulation runs by default: a
// couple of seconds.
const defaultSchedules = 300
