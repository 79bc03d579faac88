//go:build race

package redlock_test

// raceOn: the race detector changes allocation counts.
const raceOn = true
