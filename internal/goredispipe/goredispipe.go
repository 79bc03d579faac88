// Package goredispipe mends what go-redis leaves in a pipeline's commands when
// it could not send the pipeline at all.
package goredispipe

import "github.com/redis/go-redis/v9"

// StampUnsent gives err, the error a go-redis pipeline returned (Exec, or
// Pipelined), to its commands that have no error of their own, when none of
// them carries it. go-redis returns the first failed command's own error
// from Exec; but when it could not get a connection because the
// connection's handshake got an error reply (WRONGPASS, a database out of
// range, BUSY), it returns that error from Exec alone and leaves every
// command with neither a reply nor an error, which reads as a nil reply.
func StampUnsent[C redis.Cmder](cmds []C, err error) {
	if err == nil {
		return
	}
	for _, c := range cmds {
		if c.Err() == err {
			return // a command's own error
		}
	}
	for _, c := range cmds {
		if c.Err() == nil {
			c.SetErr(err)
		}
	}
}
