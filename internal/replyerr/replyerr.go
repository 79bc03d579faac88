// Package replyerr finds a Redis error reply in an error's chain, however a
// driver or its client wraps it: an error reply is known by its message,
// which starts with its code ("MOVED 3999 127.0.0.1:6381", "CROSSSLOT Keys in
// request don't hash to the same slot"), whatever type the client gives it.
package replyerr

import "errors"

// Find calls match with the message of each error in err's chain
// (errors.Unwrap, and the errors of a join depth first, the join's own
// message before them) until match returns true, and reports whether it did.
func Find(err error, match func(msg string) bool) bool {
	for err != nil {
		if match(err.Error()) {
			return true
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if Find(e, match) {
					return true
				}
			}
			return false
		}
		err = errors.Unwrap(err)
	}
	return false
}
