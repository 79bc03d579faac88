package main

import (
	"errors"
	"testing"
)

// TestLostMessage: the line that tells a lost lock names the subcommand
// once, also when what fn returned is an error of run's own ("run: fork/exec
// ...": an exec that failed after the lock was taken), and tells CMD's
// status or that it did not run.
func TestLostMessage(t *testing.T) {
	t.Parallel()
	execErr := exitWith(exitCannotExec, errors.New("run: fork/exec /x/job: text file busy"))
	for _, tc := range []struct {
		name, cmdName string
		called        bool
		fnErr         error
		cause         string
		want          string
	}{
		{"run", "job", true, execErr, "", `run: the lock "k" was lost: fork/exec /x/job: text file busy`},
		{"run", "job", true, execErr, "expired", `run: the lock "k" was lost: fork/exec /x/job: text file busy: expired`},
		{"run", "job", false, nil, "", `run: the lock "k" was lost (job did not run)`},
		{"run", "job", true, nil, "", `run: the lock "k" was lost (job exited with status 0)`},
		{"run", "job", true, &exitError{code: 3}, "", `run: the lock "k" was lost (job exited with status 3)`},
		{"hold", "", true, nil, "", `hold: the lock "k" was lost`},
		{"hold", "", true, exitWith(1, errors.New("run: not hold's")), "", `hold: the lock "k" was lost: run: not hold's`},
	} {
		if got := lostMessage(tc.name, "k", tc.cmdName, tc.called, tc.fnErr, tc.cause); got != tc.want {
			t.Errorf("lostMessage(%s, %s, called %v, %v, %q):\n got %s\nwant %s", tc.name, tc.cmdName, tc.called, tc.fnErr, tc.cause, got, tc.want)
		}
	}
}
