package redlockotel_test

import (
	"errors"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
)

// refusingProvider is a MeterProvider whose meters refuse to create the
// instrument named refuse, returning no instrument and an error, as an
// implementation of the metric API may; every other instrument comes from
// the provider under it.
type refusingProvider struct {
	metric.MeterProvider
	refuse string
}

func (p refusingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return refusingMeter{p.MeterProvider.Meter(name, opts...), p.refuse}
}

type refusingMeter struct {
	metric.Meter
	refuse string
}

func (m refusingMeter) err(name string) error {
	return errors.New("this meter creates no instrument " + name)
}

func (m refusingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	if name == m.refuse {
		return nil, m.err(name)
	}
	return m.Meter.Float64Histogram(name, opts...)
}

func (m refusingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	if name == m.refuse {
		return nil, m.err(name)
	}
	return m.Meter.Int64Counter(name, opts...)
}

func (m refusingMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	if name == m.refuse {
		return nil, m.err(name)
	}
	return m.Meter.Int64UpDownCounter(name, opts...)
}

// Instrument's doc: "An instrument that cannot be created is reported to
// otel.Handle and records nothing; the others still work." A provider that
// returned no instrument with its error made the observer call a nil
// instrument: TryLock panicked in its caller (redlock.acquire.duration,
// redlock.locks.held), and every node call's report panicked on the
// Client's goroutines, recovered and logged (redlock.node.duration).
func TestInstrumentNotCreated(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, refuse := range []string{"redlock.acquire.duration", "redlock.hold.duration", "redlock.locks.held", "redlock.lock.lost", "redlock.node.duration"} {
		t.Run(refuse, func(t *testing.T) {
			var mu sync.Mutex
			var handled []string
			prevHandler := otel.GetErrorHandler()
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, err.Error())
			}))
			t.Cleanup(func() { otel.SetErrorHandler(prevHandler) })
			logged := new(syncbuf.Buffer) // the Client's report of an observer's panic on its goroutines
			prevLog := log.Writer()
			log.SetOutput(logged)
			t.Cleanup(func() { log.SetOutput(prevLog) })

			tel := newTelemetry(t)
			mp := refusingProvider{tel.mp, refuse}
			c := open(t, redistest.Addrs(servers), tel.option(redlockotel.WithMeterProvider(mp)),
				redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(time.Second))
			ctx := t.Context()
			var lockErr error
			func() {
				defer func() {
					if r := recover(); r != nil {
						lockErr = errors.New("panic: " + panicText(r))
					}
				}()
				l, err := c.TryLock(ctx, "uncreated")
				require.NoError(t, err)
				require.NoError(t, l.Extend(ctx, 5*time.Second))
				require.NoError(t, l.Unlock(ctx))
				// A lost lock: the counter and the hold histogram of a loss.
				l, err = c.TryLock(ctx, "uncreated")
				require.NoError(t, err)
				for _, s := range servers {
					_, err := s.Do(ctx, "DEL", "uncreated")
					require.NoError(t, err)
				}
				require.ErrorIs(t, l.Extend(ctx, 5*time.Second), redlock.ErrLockLost)
			}()
			require.NoError(t, lockErr, "the calls of a Client whose %s could not be created", refuse)
			require.NoError(t, c.Close())
			assert.Zero(t, strings.Count(logged.String(), "panic in Observer"), "times an observer's method panicked on the Client's goroutines")

			mu.Lock()
			assert.Contains(t, strings.Join(handled, "\n"), "this meter creates no instrument "+refuse, "the failure is not reported to otel.Handle")
			mu.Unlock()
			spans := map[string]int{}
			for _, s := range tel.spans.Ended() {
				spans[s.Name()]++
			}
			assert.Equal(t, map[string]int{"redlock.TryLock": 2, "redlock.Extend": 2, "redlock.Unlock": 1}, spans, "the spans")
			ms := tel.metrics(t)
			for _, name := range []string{"redlock.acquire.duration", "redlock.hold.duration", "redlock.locks.held", "redlock.lock.lost", "redlock.node.duration"} {
				_, has := ms[name]
				assert.Equal(t, name != refuse, has, "metric %s collected", name)
			}
		})
	}
}

func panicText(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return "non-error value"
}
