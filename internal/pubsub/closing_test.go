package pubsub_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/pubsub"
)

// closeCounter is a connection that counts its Close calls.
type closeCounter struct{ closed *atomic.Int32 }

func (c closeCounter) Close() error {
	c.closed.Add(1)
	return nil
}

// DialUntilDone returns a dial's result, or ctx's error as soon as ctx ends
// while the dial goes on; the connection that dial makes later is closed.
func TestDialUntilDone(t *testing.T) {
	var closed atomic.Int32
	c, err := pubsub.DialUntilDone(t.Context(), func() (closeCounter, error) { return closeCounter{&closed}, nil })
	require.NoError(t, err)
	require.NotNil(t, c.closed)
	require.Zero(t, closed.Load(), "a connection returned to the caller is the caller's")

	refused := errors.New("refused")
	_, err = pubsub.DialUntilDone(t.Context(), func() (closeCounter, error) { return closeCounter{}, refused })
	require.ErrorIs(t, err, refused)

	ctx, cancel := context.WithCancel(t.Context())
	release := make(chan struct{})
	returned := make(chan error, 1)
	go func() {
		_, err := pubsub.DialUntilDone(ctx, func() (closeCounter, error) {
			<-release // a dial that does not watch ctx
			return closeCounter{&closed}, nil
		})
		returned <- err
	}()
	cancel()
	select {
	case err := <-returned:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("DialUntilDone waited for the dial after its context ended")
	}
	close(release)
	require.Eventually(t, func() bool { return closed.Load() == 1 }, 5*time.Second, time.Millisecond,
		"the connection made after the context ended was not closed")
}
