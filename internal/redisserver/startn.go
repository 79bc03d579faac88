package redisserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// StartN starts n servers at once, as [Start] does each. If any fails, it
// closes the others and returns the errors joined (one wrapping
// [ErrNotInstalled] when the binary is missing, reported once).
func StartN(ctx context.Context, n int, opts ...Option) ([]*Server, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if n < 0 {
		return nil, fmt.Errorf("redistest: StartN: n = %d < 0", n)
	}
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = Start(ctx, opts...) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		return servers, nil
	}
	for _, s := range servers {
		if s != nil {
			s.Close()
		}
	}
	for _, e := range errs {
		if errors.Is(e, ErrNotInstalled) {
			return nil, e // the same for every server
		}
	}
	return nil, err
}
