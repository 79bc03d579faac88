package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// wrongPassNode is a node whose every call fails as one with a wrong
// password does: its identity question too.
type wrongPassNode struct{ *memory.Node }

var errWrongPass = errors.New("WRONGPASS invalid username-password pair or user is disabled.")

func (wrongPassNode) Identity(context.Context) ([]string, error) { return nil, errWrongPass }
func (wrongPassNode) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errWrongPass
}

// A node whose identity question fails because the node fails every call
// for good (a wrong password, a database the server does not have, a
// cluster address of a server that is not cluster-enabled) is no node that
// "does not tell which server it is": it takes no part in any quorum, and
// its calls' errors say why. The warning, and its advice to give the user
// +info, are for a node that answers the locks but refuses INFO: NOPERM, or
// INFO renamed away (ERR unknown command). It was logged for WRONGPASS too,
// before the error that says what is wrong.
func TestLoggerIdentityFailsWithNode(t *testing.T) {
	var out syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	nodes := []driver.Node{wrongPassNode{memory.New()}, wrongPassNode{memory.New()}, memory.New()}
	c, err := redlock.New(nodes, redlock.WithLogger(logger))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.TryLock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	c.Close() // the identity questions have ended
	assert.Zero(t, strings.Count(out.String(), "does not tell which server it is"), out.String())
}
