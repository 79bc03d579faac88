// Package redlockotel reports what a redlock.Client does as OpenTelemetry
// traces and metrics. It is a module of its own, so that users of redlock
// who do not want OpenTelemetry never download it.
//
//	client, err := redlock.Open("rueidis", addrs, redlockotel.Instrument())
//
// # Spans
//
// redlock.TryLock (one per acquisition attempt: a TryLock, or each attempt of
// a Lock), redlock.Lock (the parent of its attempts), redlock.Extend,
// redlock.Unlock, and redlock.Do (the parent of its Lock, of the Extends that
// keep the lock, of its Unlock, and of whatever its function starts on the
// context it gets). Their attributes: redlock.key (unless WithoutKey; a
// key's bytes that are not valid UTF-8 each as U+FFFD, since OTLP's strings
// must be valid UTF-8), redlock.quorum and
// redlock.nodes.granted (the votes of the call's round; on a Lock, those of
// its last attempt; on a Do, those of the attempt that obtained its lock;
// absent when no round was sent, as for bad input or an Extend after Unlock),
// redlock.fencing.token when the Client fences (an int64; a token above
// 2^63-1, which only a counter set that high gives, as its decimal text);
// redlock.outcome and
// redlock.attempt on an attempt, redlock.attempts on a Lock, redlock.ttl
// (seconds) on an Extend, and redlock.lost (bool) on an Extend and a Do. A
// failed call has status Error with its error recorded, and error.type:
// on an attempt, its outcome (not_obtained, unavailable) or, for the
// outcome error, its cause's class (as below); on the others, when so many
// nodes answered an error that retrying cannot fix that no quorum was
// possible, the class of the first of those errors to come, as on
// redlock.node.duration (NOPERM, READONLY, closed, ...), else the redlock
// error it matches (same_server, already_unlocked, unavailable,
// not_obtained, lock_lost), else its class as on redlock.node.duration
// (timeout, canceled, closed, a Redis error code, the Go type: a Do's
// function's error); an attempt, or a Lock, that did not obtain the lock
// is a failed call; an Extend that its caller
// canceled (as Do does with one in flight when its function returns) has
// its error recorded, and no Error status, unless it found the lock lost;
// so has an Extend that the holder's own Unlock came before (in flight when
// Unlock ran, or called after it: redlock.ErrAlreadyUnlocked). A
// lost lock is an event,
// redlock.lock.lost (with redlock.key unless WithoutKey, redlock.lost.how and redlock.held, in
// seconds, and, when redlock.LockEnd.Err says why it was lost, error.type as
// on the redlock.lock.lost counter and exception.message, the cause's text,
// with the nodes' errors), on the span of the call that found it (an Extend, an Unlock,
// the Do whose lock it was, or the caller's span for Lock.TTL; on none when
// Done's timer found it); a waiter's wake (see redlock.Observer's Wake) is
// an event, redlock.wake, on its Lock span.
//
// # Metrics
//
// Durations are in seconds; no metric has the key as an attribute, since keys
// are unbounded.
//
//   - redlock.acquire.duration (histogram): every acquisition attempt, as
//     its caller waited for it (redlock.AttemptDone.Duration: a failed
//     attempt's includes the release of its key on the nodes that granted
//     it), with redlock.outcome = granted, not_obtained, unavailable or
//     error (see redlock.Outcome) and, when it failed, error.type, as on
//     its span.
//   - redlock.hold.duration (histogram): from a grant to the end of the
//     lock's life (Unlock, or the loss), with redlock.lost (bool).
//   - redlock.locks.held (up-down counter): locks granted whose life has not
//     ended. A Lock that is neither unlocked nor watched (Lock.Done, as Do
//     does) ends only at its next call that finds it over (Unlock, or an
//     Extend or TTL after its validity ran out or that found it lost: see
//     redlock.Observer's LockEnd), so it counts until then, and for good if
//     no such call comes.
//   - redlock.lock.lost (counter): locks lost, with redlock.lost.how =
//     lost_extend, expired, lost_unlock, lost_ttl, closed or
//     refused_extend (see redlock.LockEnd) and, when redlock.LockEnd.Err
//     says why, error.type: the class of the first node's error in it (of
//     the first error retrying cannot fix, for refused_extend), as
//     on redlock.node.duration (the code of its Redis error reply, timeout,
//     canceled, closed, or the error's Go type), *redlock.VoteError when no
//     node failed (the nodes no longer held the lock), or the class of the
//     cause itself: a few values, never the error's text.
//   - redlock.node.duration (histogram): every call to a node as the Client
//     sees it (queueing included), with redlock.node (the node's address,
//     without credentials; a Redis Cluster node's with its cluster=true and
//     addr= seeds, as in errors; bytes that are not valid UTF-8 each as
//     U+FFFD, as in redlock.key), redlock.operation (redlock.OpAcquire, ...) and,
//     on failure, error.type: the code of the node's error reply, alike
//     for every driver (READONLY: a failover made the node a replica;
//     NOPERM, OOM, CLUSTERDOWN, TRYAGAIN, ERR, ...), else timeout, canceled,
//     closed, or the Go type of the innermost error.
//   - redlock.node.pending (gauge): commands waiting in a node's local queue
//     to be sent, and redlock.node.pending.wait (gauge, seconds): how long
//     the oldest of them has waited, with redlock.node, for the nodes that
//     queue (redlock.Client.Queues: those of every Redis driver), read at
//     each collection until the Client is closed; Clients that share one
//     MeterProvider add up per node (the sum of the depths, the longest
//     wait), whether they share one observer or each has its own. A
//     queue that stays deep is a node, or a Client, that cannot keep up.
package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/replyerr"
	"github.com/go-redlock/redlock/redlock"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/go-redlock/redlock/redlockotel"

// An Option configures Instrument.
type Option func(*config)

type config struct {
	tp    trace.TracerProvider
	mp    metric.MeterProvider
	noKey bool
}

// WithoutKey leaves the lock's key out of the spans and of the
// redlock.lock.lost event (redlock.key), for keys that name what should not
// leave the process (a customer, a document). The metrics never carry it,
// with or without this option, nor do the errors recorded.
func WithoutKey() Option {
	return func(c *config) { c.noKey = true }
}

// WithTracerProvider sets the provider of the tracer (default: the global
// one, otel.GetTracerProvider, at the time of Instrument; a nil tp keeps the
// default, and so does a nil pointer in tp, such as a
// *sdktrace.TracerProvider variable left unset).
func WithTracerProvider(tp trace.TracerProvider) Option {
	if isNil(tp) {
		tp = nil // the default
	}
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the provider of the meter (default: the global one,
// otel.GetMeterProvider, at the time of Instrument; a nil mp keeps the
// default, and so does a nil pointer in mp, such as a
// *sdkmetric.MeterProvider variable left unset).
func WithMeterProvider(mp metric.MeterProvider) Option {
	if isNil(mp) {
		mp = nil // the default
	}
	return func(c *config) { c.mp = mp }
}

// isNil reports whether v is nil or holds a nil pointer: a provider given as
// a nil *sdktrace.TracerProvider is not a nil interface, and its Tracer
// panics.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// Instrument returns a redlock.Option that makes a Client report its spans
// and metrics. It can stand beside other observers (redlock.WithObserver,
// redlock.WithLogger). An instrument that cannot be created is reported to
// otel.Handle; the others still work, and so does the Client: when the
// provider returned no instrument with its error, nothing is recorded in its
// place (what it returned with the error, if anything, is used as it is).
func Instrument(opts ...Option) redlock.Option {
	return redlock.WithObserver(NewObserver(opts...))
}

// NewObserver returns the redlock.Observer that Instrument installs, for
// callers that combine observers themselves.
func NewObserver(opts ...Option) redlock.Observer {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	meter := cfg.mp.Meter(ScopeName)
	o := &observer{tracer: cfg.tp.Tracer(ScopeName), noKey: cfg.noKey}
	var err, errs error
	o.acquire, err = meter.Float64Histogram("redlock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of lock acquisition attempts."),
		metric.WithExplicitBucketBoundaries(secondsBuckets...))
	errs = errors.Join(errs, err)
	o.hold, err = meter.Float64Histogram("redlock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long locks were held, from the grant to Unlock or the loss."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	errs = errors.Join(errs, err)
	o.held, err = meter.Int64UpDownCounter("redlock.locks.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks granted and not yet unlocked or lost."))
	errs = errors.Join(errs, err)
	o.lost, err = meter.Int64Counter("redlock.lock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks lost while held."))
	errs = errors.Join(errs, err)
	o.node, err = meter.Float64Histogram("redlock.node.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of calls to one node, as the client sees them."),
		metric.WithExplicitBucketBoundaries(nodeBuckets...))
	errs = errors.Join(errs, err)
	o.pending, err = meter.Int64ObservableGauge("redlock.node.pending", metric.WithUnit("{command}"),
		metric.WithDescription("Commands waiting in a node's local queue to be sent."))
	errs = errors.Join(errs, err)
	o.pendingWait, err = meter.Float64ObservableGauge("redlock.node.pending.wait", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest command in a node's local queue has waited."))
	errs = errors.Join(errs, err)
	// A provider may return no instrument beside its error: one that
	// records nothing stands in, so that the calls that report to it work.
	if o.acquire == nil {
		o.acquire = noop.Float64Histogram{}
	}
	if o.hold == nil {
		o.hold = noop.Float64Histogram{}
	}
	if o.held == nil {
		o.held = noop.Int64UpDownCounter{}
	}
	if o.lost == nil {
		o.lost = noop.Int64Counter{}
	}
	if o.node == nil {
		o.node = noop.Float64Histogram{}
	}
	if o.pending == nil || o.pendingWait == nil {
		o.pending, o.pendingWait = nil, nil
	}
	o.meter = meter
	if errs != nil {
		otel.Handle(fmt.Errorf("redlockotel: %w", errs))
	}
	return o
}

var (
	secondsBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets    = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
	nodeBuckets    = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
)

// Attribute keys.
const (
	keyKey       = attribute.Key("redlock.key")
	quorumKey    = attribute.Key("redlock.quorum")
	grantedKey   = attribute.Key("redlock.nodes.granted")
	tokenKey     = attribute.Key("redlock.fencing.token")
	outcomeKey   = attribute.Key("redlock.outcome")
	attemptKey   = attribute.Key("redlock.attempt")
	attemptsKey  = attribute.Key("redlock.attempts")
	lostKey      = attribute.Key("redlock.lost")
	lostHowKey   = attribute.Key("redlock.lost.how")
	ttlKey       = attribute.Key("redlock.ttl")
	nodeKey      = attribute.Key("redlock.node")
	operationKey = attribute.Key("redlock.operation")
	errorTypeKey = attribute.Key("error.type")
)

type observer struct {
	redlock.NopObserver // for the methods Observer may gain

	tracer  trace.Tracer
	noKey   bool // WithoutKey
	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	held    metric.Int64UpDownCounter
	lost    metric.Int64Counter
	node    metric.Float64Histogram
	// The gauges of the nodes' queues, read from the Clients (see
	// ObserveClient); nil if they could not be created or registered.
	pending     metric.Int64ObservableGauge
	pendingWait metric.Float64ObservableGauge
	meter       metric.Meter
	own         *queues // the Clients watched, when meter cannot be shared (see queuesOf); guarded by queuesMu

	nodeAttrs  sync.Map     // nodeOp: metric.MeasurementOption, for calls without error
	nodeCached atomic.Int64 // entries in nodeAttrs, at most maxNodeAttrs
}

// maxNodeAttrs bounds the attribute sets of node calls that an observer
// keeps: the nodes of its Clients times the operations. The drivers name
// their nodes by the servers they reach, but a node over a client whose
// servers cannot be learned (a goredis client of the caller's own type, a
// redigo pool, unless NewNamed names them) has a name of its own
// (goredis-N, redigo(0x...)): a program that keeps making such Clients would
// otherwise grow the cache without end. Beyond it, a call's set is made for
// the call.
const maxNodeAttrs = 1024

type nodeOp struct{ node, op string }

// keyAttr is the redlock.key attribute of key, made valid UTF-8: a key may
// be any bytes, but OTLP's strings are protobuf strings, and one that is not
// valid UTF-8 fails the marshalling of the whole export request, every
// span of the batch with it. Each invalid byte becomes U+FFFD, as
// encoding/json and slog's JSON handler write it.
func keyAttr(key string) attribute.KeyValue { return keyKey.String(validUTF8(key)) }

// validUTF8 returns s with each byte that is not valid UTF-8 written as
// U+FFFD: what an attribute may carry (see keyAttr).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte is one utf8.RuneError
		b.WriteRune(r)
	}
	return b.String()
}

func (o *observer) start(ctx context.Context, name, key string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !o.noKey {
		attrs = append(attrs, keyAttr(key))
	}
	return o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
}

// finish sets the span's status and error.type from err and ends it.
func finish(span trace.Span, err error) {
	if err != nil {
		finishAs(span, err, callErrorType(err))
		return
	}
	span.End()
}

// finishAs sets the status of span, which failed with err, and its
// error.type, and ends it.
func finishAs(span trace.Span, err error, errType string) {
	recordError(span, err)
	span.SetAttributes(errorTypeKey.String(errType))
	span.SetStatus(codes.Error, firstLine(err.Error()))
	span.End()
}

// callErrors are the errors of the Client's calls that a failed span's
// error.type names, in the order they are looked for: ErrUnavailable joins
// ErrNotObtained or ErrLockLost, and ErrAlreadyUnlocked joins ErrLockLost.
var callErrors = []struct {
	err  error
	name string
}{
	{redlock.ErrSameServer, "same_server"},
	{redlock.ErrAlreadyUnlocked, "already_unlocked"},
	{redlock.ErrUnavailable, "unavailable"},
	{redlock.ErrNotObtained, "not_obtained"},
	{redlock.ErrLockLost, "lock_lost"},
}

// callErrorType classifies the error of a call (a span's) for error.type:
// when so many nodes answered an error that retrying cannot fix that no
// quorum was possible (redlock.VoteError.Permanent: NOPERM, READONLY,
// closed, ...), the class of the first of those errors, as on
// redlock.node.duration (see permanentNodeError); else the redlock error
// it matches (see callErrors); else errorType's class (timeout, canceled,
// closed, a Redis code, the Go type: a Do's function's error, bad input).
func callErrorType(err error) string {
	if ne := permanentNodeError(err); ne != nil {
		return errorType(ne.Err)
	}
	for _, c := range callErrors {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return errorType(err)
}

// permanentNodeError returns, when err's votes (a *redlock.VoteError) say
// that so many nodes answered an error that retrying cannot fix that no
// quorum was possible, the first *redlock.NodeError in err whose error is
// one of those (redlock.NodeError.Permanent); else nil. Not merely the
// first node's error: an attempt or an extension that such errors decided
// may have a node's other error (a node down, failing at once) before
// them, since it waits for the replies that tell whether they leave a
// quorum possible (see redlock.VoteError.Permanent).
func permanentNodeError(err error) *redlock.NodeError {
	var ve *redlock.VoteError
	if !errors.As(err, &ve) || ve.Permanent <= ve.Nodes-ve.Needed {
		return nil
	}
	var walk func(err error) *redlock.NodeError
	walk = func(err error) *redlock.NodeError {
		switch e := err.(type) {
		case nil:
			return nil
		case *redlock.NodeError:
			if e.Permanent() {
				return e
			}
			return nil
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				if ne := walk(c); ne != nil {
					return ne
				}
			}
			return nil
		}
		return walk(errors.Unwrap(err))
	}
	if ne := walk(err); ne != nil {
		return ne
	}
	var ne *redlock.NodeError // counted otherwise than here: the first node's
	if errors.As(err, &ne) {
		return ne
	}
	return nil
}

// attemptErrorType classifies the error of an acquisition attempt for
// error.type: its outcome when the nodes' verdict was not_obtained or
// unavailable; for the outcome error (bad input, a closed Client, a context
// that ended before a verdict, errors that retrying cannot fix), the class
// of its cause.
func attemptErrorType(oc redlock.Outcome, err error) string {
	if oc == redlock.OutcomeNotObtained || oc == redlock.OutcomeUnavailable {
		return string(oc)
	}
	if t := callErrorType(err); t != "not_obtained" && t != "unavailable" {
		return t
	}
	return errorType(err) // the context ended first
}

// firstLine is the start of an error's text: errors.Join puts each error on a
// line of its own, and the status needs only the first.
func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// tokenAttr sets a fencing token on span, as an int64, or, above
// math.MaxInt64, which an int64 cannot hold (a counter that was set that
// high), as its decimal text rather than a negative number.
func tokenAttr(span trace.Span, token uint64) {
	switch {
	case token == 0:
	case token <= math.MaxInt64:
		span.SetAttributes(tokenKey.Int64(int64(token)))
	default:
		span.SetAttributes(tokenKey.String(strconv.FormatUint(token, 10)))
	}
}

// votesAttrs sets the votes of a call's round on span; a call that sent no
// round (bad input, a lock already over, another attempt in flight) has none
// (v.Nodes is 0), and sets nothing: a quorum of 0 would be false.
func votesAttrs(span trace.Span, v redlock.Votes) {
	if v.Nodes == 0 {
		return
	}
	span.SetAttributes(quorumKey.Int(v.Quorum), grantedKey.Int(v.Granted))
}

// outerSpan is the context key of the *outer of a Do or a Lock, on whose span
// the calls inside it (Do's Lock, Lock's attempts) set the votes and token of
// the lock they obtained: redlock.quorum, redlock.nodes.granted and
// redlock.fencing.token are on every span of an acquisition.
type outerSpan struct{}

// outer is the span of a Do or a Lock, for the acquisition of key inside it.
// A Do's is for its own Lock only (once), which claims it: the function Do
// runs gets the Do's context too, and a lock it takes is another's. A Lock's
// is for all its attempts, which alone get its context.
type outer struct {
	span  trace.Span
	key   string
	once  bool
	taken atomic.Bool // once: claimed by the Do's Lock
}

// claim returns the outer in ctx that an acquisition of key belongs to, and
// nil if there is none.
func claim(ctx context.Context, key string) *outer {
	up, ok := ctx.Value(outerSpan{}).(*outer)
	if !ok || up.key != key || up.once && !up.taken.CompareAndSwap(false, true) {
		return nil
	}
	return up
}

// lastVotes is the context key of a Lock's record of its last attempt's
// votes (a *redlock.Votes), which the Lock passes on to its Do.
type lastVotes struct{}

// setOuter sets the votes and token of an acquisition on the span of up, the
// Do or Lock it belongs to (see claim), if not nil: never on a span of the
// caller's.
func setOuter(up *outer, v redlock.Votes, token uint64) {
	if up != nil {
		votesAttrs(up.span, v)
		tokenAttr(up.span, token)
	}
}

func (o *observer) Do(ctx context.Context, e redlock.DoStart) (context.Context, func(redlock.DoDone)) {
	ctx, span := o.start(ctx, "redlock.Do", e.Key)
	ctx = context.WithValue(ctx, outerSpan{}, &outer{span: span, key: e.Key, once: true})
	return ctx, func(d redlock.DoDone) {
		span.SetAttributes(lostKey.Bool(d.Lost))
		finish(span, d.Err)
	}
}

func (o *observer) Lock(ctx context.Context, e redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	up := claim(ctx, e.Key) // a Do's, or none
	ctx, span := o.start(ctx, "redlock.Lock", e.Key)
	last := new(redlock.Votes) // of the last attempt, which the attempts set
	ctx = context.WithValue(context.WithValue(ctx, outerSpan{}, &outer{span: span, key: e.Key}), lastVotes{}, last)
	return ctx, func(d redlock.LockDone) {
		if d.Err == nil {
			setOuter(up, *last, d.Token)
		}
		span.SetAttributes(attemptsKey.Int(d.Attempts))
		tokenAttr(span, d.Token)
		finish(span, d.Err)
	}
}

func (o *observer) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	up := claim(ctx, e.Key) // a Lock's, or none
	parent := ctx
	ctx, span := o.start(ctx, "redlock.TryLock", e.Key, attemptKey.Int(e.Attempt))
	return ctx, func(d redlock.AttemptDone) {
		span.SetAttributes(outcomeKey.String(string(d.Outcome)))
		votesAttrs(span, d.Votes)
		tokenAttr(span, d.Token)
		setOuter(up, d.Votes, d.Token)
		if last, ok := parent.Value(lastVotes{}).(*redlock.Votes); up != nil && ok {
			*last = d.Votes
		}
		if d.Outcome == redlock.OutcomeGranted {
			o.held.Add(ctx, 1)
		}
		if d.Err == nil {
			o.acquire.Record(ctx, d.Duration.Seconds(), outcomeOption(d.Outcome))
			span.End()
			return
		}
		et := attemptErrorType(d.Outcome, d.Err)
		o.acquire.Record(ctx, d.Duration.Seconds(), metric.WithAttributes(
			outcomeKey.String(string(d.Outcome)), errorTypeKey.String(et)))
		finishAs(span, d.Err, et)
	}
}

var outcomeOptions = map[redlock.Outcome]metric.MeasurementOption{}

func init() {
	for _, oc := range []redlock.Outcome{redlock.OutcomeGranted, redlock.OutcomeNotObtained, redlock.OutcomeUnavailable, redlock.OutcomeError} {
		outcomeOptions[oc] = metric.WithAttributeSet(attribute.NewSet(outcomeKey.String(string(oc))))
	}
}

func outcomeOption(oc redlock.Outcome) metric.MeasurementOption {
	if opt, ok := outcomeOptions[oc]; ok {
		return opt
	}
	return metric.WithAttributes(outcomeKey.String(string(oc)))
}

func (o *observer) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	ctx, span := o.start(ctx, "redlock.Extend", e.Key, ttlKey.Float64(e.TTL.Seconds()))
	tokenAttr(span, e.Token)
	return ctx, func(d redlock.ExtendDone) {
		votesAttrs(span, d.Votes)
		span.SetAttributes(lostKey.Bool(d.Lost))
		if !d.Lost && (errors.Is(d.Err, context.Canceled) || errors.Is(d.Err, redlock.ErrAlreadyUnlocked)) {
			// Its caller gave up, as Do does with an extension in
			// flight when its function returns, or the holder's own
			// Unlock came first: recorded, but not a failure of the
			// lock (the logger does not warn of either).
			recordError(span, d.Err)
			span.End()
			return
		}
		finish(span, d.Err)
	}
}

func (o *observer) Unlock(ctx context.Context, e redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	ctx, span := o.start(ctx, "redlock.Unlock", e.Key)
	tokenAttr(span, e.Token)
	return ctx, func(d redlock.UnlockDone) {
		votesAttrs(span, d.Votes)
		finish(span, d.Err)
	}
}

var (
	heldLost   = metric.WithAttributeSet(attribute.NewSet(lostKey.Bool(true)))
	heldUnlock = metric.WithAttributeSet(attribute.NewSet(lostKey.Bool(false)))
)

func (o *observer) LockEnd(ctx context.Context, e redlock.LockEnd) {
	o.held.Add(ctx, -1)
	if !e.Lost() {
		o.hold.Record(ctx, e.Held.Seconds(), heldUnlock)
		return
	}
	o.hold.Record(ctx, e.Held.Seconds(), heldLost)
	attrs := []attribute.KeyValue{lostHowKey.String(e.How), attribute.Float64("redlock.held", e.Held.Seconds())}
	if !o.noKey {
		attrs = append(attrs, keyAttr(e.Key))
	}
	if e.Err == nil {
		o.lost.Add(ctx, 1, metric.WithAttributes(lostHowKey.String(e.How)))
	} else {
		et := errorTypeKey.String(lostErrorType(e.Err))
		o.lost.Add(ctx, 1, metric.WithAttributes(lostHowKey.String(e.How), et))
		attrs = append(attrs, et, exceptionMessageKey.String(validUTF8(e.Err.Error())))
	}
	trace.SpanFromContext(ctx).AddEvent("redlock.lock.lost", trace.WithAttributes(attrs...))
}

// recordError is span.RecordError(err), but for an error whose text is not
// valid UTF-8: its nodes' names, in the *NodeErrors it joins, may be any
// bytes (see address), and one invalid string fails the export of the
// whole batch. Its exception event then has the text made valid UTF-8 (see
// validUTF8), beside the type that RecordError gives.
func recordError(span trace.Span, err error) {
	msg := err.Error()
	if utf8.ValidString(msg) {
		span.RecordError(err)
		return
	}
	span.AddEvent("exception", trace.WithAttributes(
		exceptionTypeKey.String(errorTypeName(err)),
		exceptionMessageKey.String(validUTF8(msg)),
	))
}

// errorTypeName is err's type as span.RecordError names it in
// exception.type: its package path and name, or its type's text for an
// unnamed one.
func errorTypeName(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String() // a pointer, say
	}
	return t.PkgPath() + "." + t.Name()
}

// exceptionTypeKey is the OpenTelemetry attribute of an error's type, as
// span.RecordError sets it on its event.
const exceptionTypeKey = attribute.Key("exception.type")

// exceptionMessageKey is the OpenTelemetry attribute of an error's text, as
// span.RecordError sets it on its event.
const exceptionMessageKey = attribute.Key("exception.message")

// lostErrorType classifies the cause of a lost lock (redlock.LockEnd.Err) for
// the error.type attribute, with as few values as errorType: the class of
// the first node's error in it (a *redlock.NodeError), as on
// redlock.node.duration, or of the first error retrying cannot fix when
// such errors left no quorum possible (an extension refused: see
// permanentNodeError); else *redlock.VoteError when the nodes answered
// that they no longer held the lock; else errorType's class of the error.
func lostErrorType(err error) string {
	if ne := permanentNodeError(err); ne != nil {
		return errorType(ne.Err)
	}
	var ne *redlock.NodeError
	if errors.As(err, &ne) {
		return errorType(ne.Err)
	}
	var ve *redlock.VoteError
	if errors.As(err, &ve) {
		return "*redlock.VoteError"
	}
	return errorType(err)
}

func (o *observer) Wake(ctx context.Context, e redlock.Wake) {
	trace.SpanFromContext(ctx).AddEvent("redlock.wake", trace.WithAttributes(attemptKey.Int(e.Attempt)))
}

// ObserveClient reports c's queues (redlock.Client.Queues) in the gauges
// redlock.node.pending and redlock.node.pending.wait, read at every
// collection, until c is closed (redlock.ClientObserver). Clients watched
// with one MeterProvider add up per node, whether they share an observer or
// each has its own (Instrument at each Open): the node's depth is the sum of
// theirs, its wait the longest.
func (o *observer) ObserveClient(c *redlock.Client) func() {
	if o.pending == nil {
		return nil // reported by NewObserver
	}
	queuesMu.Lock()
	defer queuesMu.Unlock()
	q := o.queuesOf()
	if q.reg == nil {
		reg, err := o.meter.RegisterCallback(q.observe, q.pending, q.pendingWait)
		if err != nil {
			otel.Handle(fmt.Errorf("redlockotel: the queues' gauges: %w", err))
			return nil
		}
		q.reg = reg
		if q.shared {
			sharedQueues[o.meter] = q
		} else {
			o.own = q
		}
	}
	q.mu.Lock()
	q.clients[c]++
	q.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { q.unwatch(c) }) }
}

// queues are the Clients whose queues the gauges of one Meter report, and
// the gauges' callback, registered while there is one (so that the
// MeterProvider keeps no observer, nor Client, once they are closed). All
// the observers made with one Meter share one queues (see sharedQueues):
// with a callback each, the gauges would report, for a node that several
// Clients share, the depth of whichever Client's callback ran last.
type queues struct {
	pending     metric.Int64ObservableGauge
	pendingWait metric.Float64ObservableGauge
	meter       metric.Meter
	shared      bool                // kept in sharedQueues while registered
	reg         metric.Registration // guarded by queuesMu
	// mu guards clients; the callback takes it, never queuesMu: the SDK
	// holds its own lock while it runs callbacks and while it registers
	// or unregisters one.
	mu      sync.Mutex
	clients map[*redlock.Client]int // watched, not closed: by how many observers
}

var (
	// queuesMu guards sharedQueues, observer.own and queues.reg.
	queuesMu sync.Mutex
	// sharedQueues are the queues of each Meter whose callback is
	// registered.
	sharedQueues = map[metric.Meter]*queues{}
)

// queuesOf returns the queues of o's Meter: the one registered, or a new one.
// A Meter that cannot be a map key (not comparable) is not shared: o keeps
// its own. queuesMu must be held.
func (o *observer) queuesOf() *queues {
	shared := reflect.ValueOf(o.meter).Comparable()
	if shared {
		if q := sharedQueues[o.meter]; q != nil {
			return q
		}
	} else if o.own != nil {
		return o.own
	}
	return &queues{pending: o.pending, pendingWait: o.pendingWait, meter: o.meter, shared: shared, clients: map[*redlock.Client]int{}}
}

// unwatch stops reading c's queues, and unregisters the gauges' callback
// once no Client is watched.
func (q *queues) unwatch(c *redlock.Client) {
	queuesMu.Lock()
	defer queuesMu.Unlock()
	q.mu.Lock()
	if q.clients[c]--; q.clients[c] <= 0 {
		delete(q.clients, c)
	}
	none := len(q.clients) == 0
	q.mu.Unlock()
	if none && q.reg != nil {
		if err := q.reg.Unregister(); err != nil {
			otel.Handle(fmt.Errorf("redlockotel: the queues' gauges: %w", err))
		}
		q.reg = nil
		if q.shared && sharedQueues[q.meter] == q {
			delete(sharedQueues, q.meter)
		}
	}
}

// observe is the gauges' callback: each node's queue, over the Clients
// watched.
func (q *queues) observe(_ context.Context, m metric.Observer) error {
	type queue struct {
		depth  int64
		oldest float64
	}
	byNode := map[string]*queue{}
	var order []string
	q.mu.Lock()
	for c := range q.clients {
		for _, nq := range c.Queues() {
			node := address(nq.Node)
			n := byNode[node]
			if n == nil {
				n = &queue{}
				byNode[node] = n
				order = append(order, node)
			}
			n.depth += int64(nq.Depth)
			n.oldest = max(n.oldest, nq.Oldest.Seconds())
		}
	}
	q.mu.Unlock()
	for _, node := range order {
		at := metric.WithAttributes(nodeKey.String(node))
		m.ObserveInt64(q.pending, byNode[node].depth, at)
		m.ObserveFloat64(q.pendingWait, byNode[node].oldest, at)
	}
	return nil
}

func (o *observer) NodeCall(ctx context.Context, e redlock.NodeCall) {
	if e.Err != nil {
		o.node.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(
			nodeKey.String(address(e.Node)), operationKey.String(e.Operation), errorTypeKey.String(errorType(e.Err))))
		return
	}
	k := nodeOp{e.Node, e.Operation}
	opt, ok := o.nodeAttrs.Load(k)
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(
			nodeKey.String(address(e.Node)), operationKey.String(e.Operation)))
		if o.nodeCached.Load() < maxNodeAttrs {
			var loaded bool
			if opt, loaded = o.nodeAttrs.LoadOrStore(k, opt); !loaded {
				o.nodeCached.Add(1)
			}
		}
	}
	o.node.Record(ctx, e.Duration.Seconds(), opt.(metric.MeasurementOption))
}

// address is a node's name without credentials: a URL loses its user
// information (already masked by the drivers) and its query, but for what
// makes a node a whole Redis Cluster, cluster=true and its other seeds
// (addr=), as the drivers name such a node: without them, it would be
// named as the server of its first seed alone, one shard's primary. It is
// valid UTF-8, as keyAttr's key: a node's name may be any bytes (a memory
// node's, another module's driver's), and one invalid byte in an attribute
// fails the whole export of the metrics beside it.
func address(name string) string {
	u, err := url.Parse(name)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return validUTF8(name)
	}
	var keep []string
	if q := u.Query(); q.Get("cluster") != "" {
		keep = append(keep, "cluster="+q.Get("cluster"))
		for _, seed := range q["addr"] {
			keep = append(keep, "addr="+seed)
		}
	}
	u.User, u.RawQuery, u.Fragment = nil, strings.Join(keep, "&"), ""
	return validUTF8(u.String())
}

// errorType classifies a node's error for the error.type attribute, with few
// values, alike for every driver: timeout, canceled, closed (the node or its
// client closed: redlock.ErrClosed), the code of a Redis error reply in the
// chain (redisCode: READONLY, NOPERM, OOM, CLUSTERDOWN, TRYAGAIN, ...), or
// else the Go type of the innermost error ("_OTHER" for the standard
// library's anonymous ones).
func errorType(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, redlock.ErrClosed):
		return "closed"
	}
	if code := redisCode(err); code != "" {
		return code
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	t := fmt.Sprintf("%T", err)
	if t == "*errors.errorString" || t == "*fmt.wrapError" || t == "*errors.joinError" {
		return "_OTHER"
	}
	return t
}

// redisCodes are the codes of Redis' error replies that error.type names.
// Each client gives its replies a type of its own (go-redis proto.RedisError
// or *proto.ReadOnlyError, redigo redis.Error, rueidis *RedisError, valkey-go
// *ValkeyError), and some one type for every code: the code is what tells a
// failover (READONLY) from a full node (OOM) or a user's rights (NOPERM).
var redisCodes = map[string]bool{
	"ERR": true, "WRONGTYPE": true, "NOAUTH": true, "WRONGPASS": true, "NOPERM": true,
	"OOM": true, "READONLY": true, "MOVED": true, "ASK": true, "TRYAGAIN": true,
	"CROSSSLOT": true, "CLUSTERDOWN": true, "MASTERDOWN": true, "LOADING": true,
	"BUSY": true, "NOSCRIPT": true, "MISCONF": true, "NOREPLICAS": true,
	"EXECABORT": true, "NOPROTO": true, "UNBLOCKED": true,
}

// redisCode returns the code of a Redis error reply in err's chain
// (errors.Unwrap, and the errors of a join), known by its message, which
// starts with it: driver.PermanentCode's for the replies retrying cannot fix
// (NOPERM also for a script's ACL refusal, which Redis 7.0 gives the code
// ERR), or one of redisCodes; "" when there is none.
func redisCode(err error) string {
	if code := driver.PermanentCode(err); code != "" {
		return code
	}
	var code string
	replyerr.Find(err, func(msg string) bool {
		word, _, _ := strings.Cut(msg, " ")
		if redisCodes[word] {
			code = word
		}
		return code != ""
	})
	return code
}
