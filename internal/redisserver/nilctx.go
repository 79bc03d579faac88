package redisserver

import "errors"

// errNilContext is the error of a call given a nil context.
var errNilContext = errors.New("redistest: nil context")
