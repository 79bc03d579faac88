package redlockotel_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	_ "github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
)

// Instrument a Client: its Do is a span, the parent of its Lock (and of that
// Lock's attempts), of its Unlock and of whatever the function does; the
// acquisitions, holds and node calls are metrics. Without the With...Provider
// options, the global providers are used (otel.SetTracerProvider,
// otel.SetMeterProvider).
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	client, err := redlock.Open("memory", []string{"otel-1", "otel-2", "otel-3"},
		redlockotel.Instrument(redlockotel.WithTracerProvider(tp), redlockotel.WithMeterProvider(mp)))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	err = client.Do(ctx, "invoice:42", func(ctx context.Context) error {
		// ... the work, with ctx: its spans are children of redlock.Do ...
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "redlock.acquire.duration" {
			p := m.Data.(metricdata.Histogram[float64]).DataPoints[0]
			outcome, _ := p.Attributes.Value("redlock.outcome")
			fmt.Println(m.Name, m.Unit, outcome.AsString(), p.Count)
		}
	}
	// Output:
	// redlock.TryLock
	// redlock.Lock
	// redlock.Unlock
	// redlock.Do
	// redlock.acquire.duration s granted 1
}

// NewObserver returns the Observer that Instrument installs, for a caller
// that gives the Client its observers itself, beside its own (each sees
// every event). Without WithMeterProvider, the global meter provider is
// used, as with Instrument.
func ExampleNewObserver() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs := redlockotel.NewObserver(redlockotel.WithTracerProvider(tp))

	client, err := redlock.Open("memory", []string{"otel-obs-1", "otel-obs-2", "otel-obs-3"},
		redlock.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// redlock.TryLock
	// redlock.Unlock
}
