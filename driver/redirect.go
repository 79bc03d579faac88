package driver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-redlock/redlock/internal/replyerr"
)

// ErrClusterServer is in the error of a call on a node given as one server,
// not as a Redis Cluster (redis://host:port?cluster=true), whose server is a
// node of a Redis Cluster that redirected the call (MOVED, ASK) to the node
// of the cluster that serves the key's hash slot: a node that is one server
// follows no redirection, and the server redirects every key of that slot
// until the cluster's slot map changes. The keys of the server's own slots
// work (all of them on a cluster of one shard). Test with errors.Is;
// [PermanentCode] counts it as an error that retrying cannot fix, and a node
// made a Redis Cluster node, with ?cluster=true, fixes it.
var ErrClusterServer = errors.New("the server is a node of a Redis Cluster, and another of its nodes serves the key's slot: give the node as a Redis Cluster (redis://host:port?cluster=true)")

// OneServerError returns err, the error of a call on a node that is one
// server (a client of one server, not a Redis Cluster's client, which
// follows redirections itself), made to match [ErrClusterServer] when its
// chain holds a Redis Cluster's redirection (an error reply "MOVED slot
// host:port" or "ASK slot host:port"), and err itself otherwise. The error
// returned keeps err, and the reply, in its chain, and ends with
// ErrClusterServer's message. Every Redis driver of this module calls it on
// the errors of its nodes that are one server; a driver over a client that
// may follow redirections (a cluster client, or one of the caller's types
// that may wrap one) must not, since there a redirection left over (a slot
// that moved more often than the client follows) passes.
func OneServerError(err error) error {
	if err == nil || errors.Is(err, ErrClusterServer) || redirectCode(err) == "" {
		return err
	}
	return fmt.Errorf("%w: %w", err, ErrClusterServer)
}

// redirectCode returns the code of the first Redis Cluster redirection in
// err's chain, "MOVED" or "ASK", or "" when there is none.
func redirectCode(err error) string {
	var code string
	replyerr.Find(err, func(msg string) bool {
		for _, c := range [...]string{"MOVED", "ASK"} {
			if strings.HasPrefix(msg, c+" ") {
				code = c
				return true
			}
		}
		return false
	})
	return code
}
