package goredispipe

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestStampUnsent(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("WRONGPASS invalid username-password pair")
	// Never sent: neither command has an error; both get the pipeline's.
	a, b := redis.NewCmd(ctx, "GET", "a"), redis.NewCmd(ctx, "GET", "b")
	StampUnsent([]*redis.Cmd{a, b}, refused)
	if a.Err() != refused || b.Err() != refused {
		t.Errorf("unsent commands: errors %v, %v; want %v", a.Err(), b.Err(), refused)
	}
	// Sent: the pipeline's error is a command's own (here a nil reply);
	// the other command's success stays.
	c, d := redis.NewStringCmd(ctx, "GET", "c"), redis.NewStringCmd(ctx, "GET", "d")
	c.SetErr(redis.Nil)
	d.SetVal("x")
	StampUnsent([]*redis.StringCmd{c, d}, redis.Nil)
	if c.Err() != redis.Nil || d.Err() != nil {
		t.Errorf("sent commands: errors %v, %v; want redis.Nil and none", c.Err(), d.Err())
	}
	StampUnsent([]*redis.StringCmd{d}, nil)
	if d.Err() != nil {
		t.Errorf("no pipeline error: %v", d.Err())
	}
}
