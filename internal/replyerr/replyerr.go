// Package replyerr finds a Redis error reply in an error's chain, however a
// driver or its client wraps it: an error reply is known by its message,
// which starts with its code ("MOVED 3999 127.0.0.1:6381", "CROSSSLOT Keys in
// request don't hash to the same slot"), whatever type the client gives it.
package replyerr

import (
	"errors"
	"strings"
)

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

// echoed starts the part of Redis's reply to an unknown command that echoes
// the command's first arguments ("ERR unknown command 'SET', with args
// beginning with: 'key' 'VALUE' 'NX' 'PX' '10000'"): a lock's value, or the
// password of an AUTH or HELLO.
const echoed = ", with args beginning with"

// CutEcho returns msg without the arguments that Redis's reply to an
// unknown command echoes, and msg itself when it echoes none.
func CutEcho(msg string) string {
	s, _, _ := strings.Cut(msg, echoed)
	return s
}

// Unechoed returns err, or, when a message in its chain echoes a command's
// arguments (see CutEcho), an error that shows none: its message is err's
// cut by CutEcho, and it wraps only the error reply's message cut the same
// way, so that Find, and so driver.PermanentCode, still see the reply's code
// ("ERR unknown command"). It does not wrap err, every error of whose chain
// would show the arguments: errors.As no longer finds the client's type of
// error reply in it.
func Unechoed(err error) error {
	if err == nil || !strings.Contains(err.Error(), echoed) {
		return err
	}
	var reply string
	Find(err, func(msg string) bool {
		if strings.Contains(msg, echoed) {
			reply = msg // the last one found is the innermost: the reply
		}
		return false
	})
	return &unechoed{msg: CutEcho(err.Error()), reply: errors.New(CutEcho(reply))}
}

// unechoed is the error of Unechoed.
type unechoed struct {
	msg   string
	reply error
}

func (e *unechoed) Error() string { return e.msg }
func (e *unechoed) Unwrap() error { return e.reply }
