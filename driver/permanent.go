package driver

import (
	"strings"

	"github.com/go-redlock/redlock/internal/replyerr"
)

// permanentCodes are the Redis error codes that retrying cannot fix: the
// server or the user's rights must change first.
var permanentCodes = [...]string{
	"NOAUTH",    // authentication required
	"WRONGPASS", // wrong user name or password
	"NOPERM",    // the ACL user may not run the command or touch the key
	"WRONGTYPE", // the key holds a value of another type
	"OOM",       // used memory over maxmemory, with a policy that evicts nothing
	"READONLY",  // the server is a read-only replica
}

// PermanentCode returns the code of a Redis error reply found in err's chain
// (errors.Unwrap, including joined errors) that retrying cannot fix —
// "NOAUTH", "WRONGPASS", "NOPERM", "WRONGTYPE", "OOM" or "READONLY" — and ""
// when there is none. An error reply is recognized by its message, which
// starts with its code, whatever type the client gives it; an error that
// wraps it may add a prefix, as long as it wraps with %w. A script's error
// reply counts too, since Redis keeps the code of an error raised by
// redis.call.
//
// Package redlock uses it to stop retrying when so many nodes answer such
// errors that no quorum is possible. A driver needs nothing more than to keep
// the client's error in the chain of the error it returns.
func PermanentCode(err error) string {
	var code string
	replyerr.Find(err, func(msg string) bool {
		code = replyCode(msg)
		return code != ""
	})
	return code
}

// replyCode returns msg's first word if it is a permanent code.
func replyCode(msg string) string {
	word, _, _ := strings.Cut(msg, " ")
	for _, code := range permanentCodes {
		if word == code {
			return code
		}
	}
	return ""
}
