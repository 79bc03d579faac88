package main

import (
	"testing"
	"time"
)

// A wait is told with the digits that say something: an acquisition at once
// (below a millisecond) is not "after 0s" (found by an outside check of
// the command).
func TestRoundWait(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{412345 * time.Nanosecond, "412µs"},
		{1234567 * time.Nanosecond, "1ms"},
		{1234 * time.Millisecond, "1.234s"},
		{12345 * time.Millisecond, "12.3s"},
	} {
		if got := roundWait(tc.d).String(); got != tc.want {
			t.Errorf("roundWait(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}
