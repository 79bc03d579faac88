package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// The calls of the Client and Lock, with their observers. Without observers
// (c.obs == nil) each is one nil check in front of the call: no clock read, no
// allocation.

// keep returns the observer's context, or ctx when the observer gave none.
func keep(ctx, observed context.Context) context.Context {
	if observed == nil {
		return ctx
	}
	return observed
}

func (c *Client) observedDo(ctx context.Context, key string, fn func(context.Context) error) error {
	if c.obs == nil {
		return c.do(ctx, key, fn)
	}
	start := time.Now()
	octx, end := c.obs.Do(ctx, DoStart{Key: key})
	err := c.do(keep(ctx, octx), key, fn)
	if end != nil {
		end(DoDone{Key: key, Duration: time.Since(start), Lost: errors.Is(err, ErrLockLost), Err: err})
	}
	return err
}

func (c *Client) observedLock(ctx context.Context, key string) (*Lock, error) {
	var tries int
	if c.obs == nil {
		return c.lock(ctx, key, &tries)
	}
	start := time.Now()
	octx, end := c.obs.Lock(ctx, LockStart{Key: key})
	l, err := c.lock(keep(ctx, octx), key, &tries)
	if end != nil {
		d := LockDone{Key: key, Attempts: tries, Duration: time.Since(start), Err: err}
		if l != nil {
			d.Token = l.token
		}
		end(d)
	}
	return l, err
}

// attempt makes one acquisition attempt. tries, when not nil, counts the
// attempts of a Lock.
func (c *Client) attempt(ctx context.Context, key string, tries *int) (*Lock, error) {
	if c.obs == nil {
		l, _, err := c.tryLock(ctx, key)
		return l, err
	}
	n := 1
	if tries != nil {
		*tries++
		n = *tries
	}
	start := time.Now()
	octx, end := c.obs.Attempt(ctx, AttemptStart{Key: key, Attempt: n})
	ctx = keep(ctx, octx)
	l, r, err := c.tryLock(ctx, key)
	if end != nil {
		d := AttemptDone{Key: key, Attempt: n, Outcome: c.outcome(r, l, err), Duration: time.Since(start), Err: err}
		if r != nil {
			d.Votes = r.votes()
		}
		if l != nil {
			d.Token, d.Until = l.token, l.until
		}
		end(d)
	}
	return l, err
}

// outcome classifies an attempt that returned l, err after the round r.
func (c *Client) outcome(r *round, l *Lock, err error) Outcome {
	switch {
	case l != nil:
		return OutcomeGranted
	case r == nil || !errors.Is(err, ErrNotObtained):
		return OutcomeError // bad input or a closed Client
	}
	n := len(r.state)
	switch failed := r.no - r.refused; {
	case failed > n-c.quorum:
		return OutcomeUnavailable
	case r.yes < c.quorum && r.no <= n-c.quorum:
		return OutcomeError // no verdict: the context ended first
	}
	return OutcomeNotObtained
}

// votes counts the round's replies so far.
func (r *round) votes() Votes {
	return Votes{Nodes: len(r.state), Quorum: r.c.quorum, Granted: r.yes, Refused: r.refused, Failed: r.no - r.refused}
}

func (l *Lock) observedExtend(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if c.obs == nil {
		_, err := l.extend(ctx, ttl)
		return err
	}
	start := time.Now()
	octx, end := c.obs.Extend(ctx, ExtendStart{Key: l.name, Token: l.token, TTL: ttl})
	ctx = keep(ctx, octx)
	r, err := l.extend(ctx, ttl)
	lost := l.reportEnd(ctx) == EndLostExtend
	if end != nil {
		d := ExtendDone{Key: l.name, Token: l.token, TTL: ttl, Duration: time.Since(start), Lost: lost, Until: l.Until(), Err: err}
		if r != nil {
			d.Votes = r.votes()
		}
		end(d)
	}
	return err
}

func (l *Lock) observedUnlock(ctx context.Context) error {
	c := l.c
	if c.obs == nil {
		_, _, err := l.unlock(ctx)
		return err
	}
	start := time.Now()
	octx, end := c.obs.Unlock(ctx, UnlockStart{Key: l.name, Token: l.token})
	ctx = keep(ctx, octx)
	r, ended, err := l.unlock(ctx)
	if ended {
		how := EndUnlocked
		if r.lost() {
			how = EndLostUnlock
			if !c.now().Before(l.Until()) {
				how = EndExpired
			}
		}
		c.obs.LockEnd(ctx, l.endEvent(how))
	} else {
		l.reportEnd(ctx) // an end before Unlock, not reported yet
	}
	if end != nil {
		end(UnlockDone{Key: l.name, Token: l.token, Votes: r.votes(), Duration: time.Since(start), Err: err})
	}
	return err
}

// reportEnd reports the end of l's life to the observers, unless it has not
// ended, was reported already, or was ended by Unlock (which reports it); it
// returns how l ended, "" when it reported nothing. l.mu must not be held.
func (l *Lock) reportEnd(ctx context.Context) string {
	l.mu.Lock()
	how := l.endHow
	l.endHow = ""
	l.mu.Unlock()
	if how != "" {
		l.c.obs.LockEnd(ctx, l.endEvent(how))
	}
	return how
}

// endEvent describes the end of l's life.
func (l *Lock) endEvent(how string) LockEnd {
	return LockEnd{Key: l.name, Token: l.token, How: how, Held: l.c.now().Sub(l.granted)}
}

// observeNode reports a node call that started at began.
func (c *Client) observeNode(ctx context.Context, i int, op, name string, began time.Time, ok bool, err error) {
	c.obs.NodeCall(ctx, NodeCall{Key: name, Node: c.names[i], Operation: op, Duration: time.Since(began), OK: ok && err == nil, Err: err})
}

// observedRelease releases key on node i outside a round (after a failed
// attempt, or after a late SET), reporting the call to the observers.
func (c *Client) observedRelease(ctx context.Context, i int, name, key, value string) {
	if c.obs == nil {
		c.nodes[i].EvalRelease(ctx, key, value)
		return
	}
	began := time.Now()
	ok, err := c.nodes[i].EvalRelease(ctx, key, value)
	c.observeNode(ctx, i, OpRelease, name, began, ok, err)
}

// subscribe subscribes to key's releases on node i, reporting the call to the
// observers.
func (c *Client) subscribe(ctx context.Context, i int, nn driver.Notifier, key string, ch chan<- struct{}) (func(), error) {
	if c.obs == nil {
		return nn.Subscribe(ctx, key, ch)
	}
	began := time.Now()
	stop, err := nn.Subscribe(ctx, key, ch)
	c.observeNode(ctx, i, OpSubscribe, key[len(c.prefix):], began, err == nil, err)
	return stop, err
}
