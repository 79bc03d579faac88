package redlockotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// nopermExtend is a memory node that refuses every extension with NOPERM,
// as a server does to an ACL user without +pexpire.
type nopermExtend struct{ *memory.Node }

func (nopermExtend) Extend(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("NOPERM User locker has no permissions to run the 'pexpire' command")
}

// A lock of Do whose extension two nodes of three refuse with NOPERM is
// given up at that extension (redlock.EndRefused): the metric of lost locks
// counts it as refused_extend (it counted it as expired, once the validity
// had ended), and the Do's and the Extend's spans say lost.
func TestRefusedExtendCounted(t *testing.T) {
	tel := newTelemetry(t)
	nodes := []driver.Node{nopermExtend{memory.New()}, nopermExtend{memory.New()}, memory.New()}
	c, err := redlock.New(nodes, tel.option(), redlock.WithTTL(5*time.Second), redlock.WithExtendInterval(10*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	err = c.Do(t.Context(), "refused", func(ctx context.Context) error {
		<-ctx.Done() // 5s later without the fix: when the validity ends
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorContains(t, err, "NOPERM")

	lost := map[string]int64{}
	for _, p := range sum(t, tel.metrics(t)["redlock.lock.lost"]) {
		v, _ := p.Attributes.Value("redlock.lost.how")
		lost[v.AsString()] += p.Value
	}
	assert.Equal(t, map[string]int64{redlock.EndRefused: 1}, lost)
	for _, name := range []string{"redlock.Do", "redlock.Extend"} {
		found := false
		for _, s := range tel.spans.Ended() {
			if s.Name() != name {
				continue
			}
			for _, a := range s.Attributes() {
				if a.Key == "redlock.lost" && a.Value.AsBool() {
					found = true
				}
			}
		}
		assert.True(t, found, "no %s span with redlock.lost", name)
	}
}
