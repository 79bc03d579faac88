//go:build race

package security_test

// raceEnabled reports whether the race detector is on: it slows the tests'
// goroutines several times over, so time bounds get more slack.
const raceEnabled = true
