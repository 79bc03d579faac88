package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// The floors' subscriptions to release notices (floorNode.subscribe), each
// with its client's own pub/sub API.

// notifyOnce sends to notify without blocking: one pending notice is enough.
func notifyOnce(notify chan<- struct{}) {
	select {
	case notify <- struct{}{}:
	default:
	}
}

func (f goredisFloor) subscribe(ctx context.Context, ch string, notify chan<- struct{}) (func(), error) {
	ps := f.c.SSubscribe(ctx, ch)
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		ps.Close()
		return nil, err
	}
	msgs := ps.Channel()
	go func() {
		for range msgs { // until Close
			notifyOnce(notify)
		}
	}()
	return func() { ps.Close() }, nil
}

func (f redigoFloor) subscribe(ctx context.Context, ch string, notify chan<- struct{}) (func(), error) {
	// A connection of its own, without the pool's read timeout: it waits
	// for messages as long as it lives.
	c, err := redigo.DialContext(ctx, "tcp", f.addr, redigo.DialConnectTimeout(dialTimeout))
	if err != nil {
		return nil, err
	}
	reply, err := redigo.DoContext(c, ctx, "SSUBSCRIBE", ch) // bounded by ctx, as the others'
	if err == nil {
		if v, ok := reply.([]any); !ok || len(v) == 0 || fmt.Sprintf("%s", v[0]) != "ssubscribe" {
			err = fmt.Errorf("SSUBSCRIBE %s: unexpected reply %v", ch, reply)
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	go func() {
		for { // until Close makes Receive fail
			v, err := c.Receive()
			if err != nil {
				return
			}
			if m, ok := v.([]any); ok && len(m) == 3 && fmt.Sprintf("%s", m[0]) == "smessage" {
				notifyOnce(notify)
			}
		}
	}()
	return func() { c.Close() }, nil
}

func (f rueidisFloor) subscribe(ctx context.Context, ch string, notify chan<- struct{}) (func(), error) {
	dc, cancel := f.c.Dedicate()
	confirmed, confirm := ssubscribed()
	dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage:      func(rueidis.PubSubMessage) { notifyOnce(notify) },
		OnSubscription: func(s rueidis.PubSubSubscription) { confirm(s.Kind) },
	})
	stop := func() { dc.Close(); cancel() }
	if err := waitSubscribed(ctx, dc.Do(ctx, dc.B().Ssubscribe().Channel(ch).Build()).Error(), confirmed); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

func (f valkeyFloor) subscribe(ctx context.Context, ch string, notify chan<- struct{}) (func(), error) {
	dc, cancel := f.c.Dedicate()
	confirmed, confirm := ssubscribed()
	dc.SetPubSubHooks(valkey.PubSubHooks{
		OnMessage:      func(valkey.PubSubMessage) { notifyOnce(notify) },
		OnSubscription: func(s valkey.PubSubSubscription) { confirm(s.Kind) },
	})
	stop := func() { dc.Close(); cancel() }
	if err := waitSubscribed(ctx, dc.Do(ctx, dc.B().Ssubscribe().Channel(ch).Build()).Error(), confirmed); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// ssubscribed returns a channel closed at the first confirmation of an
// SSUBSCRIBE, and confirm, which a client's subscription hook calls with the
// kind of each confirmation.
func ssubscribed() (confirmed <-chan struct{}, confirm func(kind string)) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func(kind string) {
		if kind == "ssubscribe" {
			once.Do(func() { close(ch) })
		}
	}
}

// waitSubscribed waits, after a subscription command sent with the error
// err, for its confirmation, or ctx's end.
func waitSubscribed(ctx context.Context, err error, confirmed <-chan struct{}) error {
	if err != nil {
		return err
	}
	select {
	case <-confirmed:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("no confirmation of the subscription"), ctx.Err())
	}
}
