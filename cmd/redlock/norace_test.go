//go:build !race && unix

package main

// raceEnabled says that the tests were built with -race, so that the binary
// they drive is built with it too.
const raceEnabled = false
