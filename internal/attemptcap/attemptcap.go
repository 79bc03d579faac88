// Package attemptcap is the error that package redlock joins to the verdict
// of Lock and Do when WithMaxAttempts's cap ended the wait ("gave up after 3
// attempts (WithMaxAttempts)"). Its type lives here, out of the library's
// API, so that the command, which caps the attempts for --wait 0, can tell
// it apart and speak of --wait rather than of an option its user never set.
package attemptcap

import (
	"errors"
	"fmt"
)

// Error says that the attempts reached the cap: Made of them were made.
type Error struct{ Made int }

func (e *Error) Error() string {
	unit := "attempts"
	if e.Made == 1 {
		unit = "attempt"
	}
	return fmt.Sprintf("gave up after %d %s (WithMaxAttempts)", e.Made, unit)
}

// Without returns err without the *Error that a join at its top holds, as
// Lock and Do return it: the rest of the join, or err itself when there is
// none.
func Without(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var rest []error
	found := false
	for _, e := range j.Unwrap() {
		if _, ok := e.(*Error); ok {
			found = true
			continue
		}
		rest = append(rest, e)
	}
	switch {
	case !found:
		return err
	case len(rest) == 1:
		return rest[0]
	}
	return errors.Join(rest...) // nil for none
}
