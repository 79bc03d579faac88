package redlock_test

import (
	"context"

	"github.com/go-redlock/redlock/drivers/memory"
)

// gatedReleases is a memory node whose releases (EvalRelease and
// ReleaseNotify) first pass gate, which may hold them, as a stopped server
// holds the commands on a live connection, or fail them; those that pass go
// to rel (another connection to the node), or to the node itself when rel is
// nil. A nil gate lets every release through.
type gatedReleases struct {
	*memory.Node
	rel  *memory.Node
	gate func(ctx context.Context) error
}

func (n gatedReleases) releaser() *memory.Node {
	if n.rel != nil {
		return n.rel
	}
	return n.Node
}

func (n gatedReleases) pass(ctx context.Context) error {
	if n.gate == nil {
		return nil
	}
	return n.gate(ctx)
}

func (n gatedReleases) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if err := n.pass(ctx); err != nil {
		return false, err
	}
	return n.releaser().EvalRelease(ctx, key, value)
}

func (n gatedReleases) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if err := n.pass(ctx); err != nil {
		return false, err
	}
	return n.releaser().ReleaseNotify(ctx, key, value)
}
