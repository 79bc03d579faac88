package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/redlock"
)

// tokenEnv is the environment variable in which run gives its command the
// fencing token.
const tokenEnv = "REDLOCK_TOKEN"

// defaultGrace is how long run waits, after it lost the lock and sent
// SIGTERM, before it kills its command.
const defaultGrace = 10 * time.Second

// releaseTimeout bounds run's Unlock after its command ended.
const releaseTimeout = 5 * time.Second

type runOptions struct {
	nodeFlags
	key     string
	ttl     time.Duration
	wait    time.Duration
	waitSet bool // --wait given; otherwise wait as long as it takes
	fencing bool
	grace   time.Duration
}

func runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --key KEY [flags] -- CMD [ARGS...]",
		Short: "Run a command while holding a lock",
		Long: `run acquires the lock KEY on the nodes, runs CMD while holding it, and
releases it when CMD exits: like flock(1), but across machines. The lock is
extended every TTL/3 while CMD runs, so CMD may run for longer than the TTL;
if run dies, the lock expires after at most one TTL (and on Linux CMD gets
SIGTERM).

CMD inherits stdin, stdout, stderr and the environment. SIGINT, SIGTERM,
SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to run are forwarded to CMD (only
to CMD, not to its children). A signal while run still waits for the lock
ends the wait: CMD never starts and run exits with 128 + the signal's number.

Without --wait, run waits for the lock as long as it takes; --wait 0 tries
once. With --fencing, CMD finds the lock's fencing token in $` + tokenEnv + `: a
number that rises with every grant of KEY; give it to the resource you
protect and have it refuse tokens lower than the highest it has seen.

If the lock is lost while CMD runs (an extension finds it gone from a
majority of the nodes, or its validity runs out because the nodes could not be
reached), CMD gets SIGTERM, then SIGKILL if it is still running after --grace,
and run exits with 76. Another client may hold the lock from that moment on.

Exit codes:
  CMD's own   CMD ran under the lock and exited (128+N if a signal N killed it)
  75          the lock was not obtained within --wait
  76          the lock was lost while CMD ran (CMD was terminated), or on
              release a majority of the nodes no longer held it
  126, 127    CMD could not be executed / was not found (the lock is not taken)
  128+N       signal N ended the wait for the lock; CMD did not run
  2           bad flags or arguments, no nodes, a bad address or option
  1           any other error of redlock`,
		Example: `  # one nightly report at a time, across every machine that runs this
  redlock run --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 --key nightly-report -- ./report.sh

  # nodes from the environment; give up at once if someone else holds it
  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  redlock run --key deploy --wait 0 -- make deploy || echo "exit $?: 75 means busy"

  # wait up to a minute; pass the fencing token on to the protected store
  redlock run --key invoices --wait 1m --fencing -- sh -c 'import-invoices --fence "$REDLOCK_TOKEN"'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("run: no command: give it after --, as in: redlock run --key KEY -- CMD [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.waitSet = cmd.Flags().Changed("wait")
			return runLocked(cmd.Context(), o, args, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything from CMD on belongs to CMD
	o.addNodes(cmd)
	o.addDriver(cmd)
	f.StringVar(&o.key, "key", "", "the lock's name (required)")
	f.DurationVar(&o.ttl, "ttl", redlock.DefaultTTL, "the lock's time to live; it is extended every TTL/3 while CMD runs")
	f.DurationVar(&o.wait, "wait", 0, "how long to wait for the lock; 0 tries once (default: as long as it takes)")
	f.BoolVar(&o.fencing, "fencing", false, "give CMD a fencing token in $"+tokenEnv)
	f.DurationVar(&o.grace, "grace", defaultGrace, "after the lock is lost, how long CMD has to exit after SIGTERM before SIGKILL")
	return cmd
}

// runLocked is the run command: it returns an *exitError for every outcome
// but success.
func runLocked(ctx context.Context, o runOptions, argv []string, stderr io.Writer) error {
	switch {
	case o.key == "":
		return usageErrorf("run: --key is required")
	case o.waitSet && o.wait < 0:
		return usageErrorf("run: --wait %v is negative", o.wait)
	case o.grace < 0:
		return usageErrorf("run: --grace %v is negative", o.grace)
	case o.driver == "memory":
		return usageErrorf("run: the memory driver keeps its locks inside one process; use goredis, redigo, rueidis or valkeygo")
	case !slices.Contains(redlock.Drivers(), o.driver):
		return usageErrorf("run: unknown driver %q; the drivers are goredis, redigo, rueidis and valkeygo", o.driver)
	}
	addrs, err := o.addrs()
	if err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		code := exitNotFound
		if errors.Is(err, fs.ErrPermission) {
			code = exitCannotExec
		}
		return exitWith(code, fmt.Errorf("run: %w", err))
	}
	// From here on, the signals that run forwards are caught: while waiting
	// they end the wait, and while CMD runs they go to CMD.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	opts := []redlock.Option{redlock.WithTTL(o.ttl)}
	if o.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	client, err := redlock.Open(o.driver, addrs, opts...)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer client.Close()

	lock, err := acquire(ctx, client, o, sigs, stderr)
	if err != nil {
		return err
	}
	return supervise(lock, client, o, path, argv, sigs, stderr)
}

// acquire takes the lock: one attempt for --wait 0, else retries until the
// lock is held, --wait passes or a signal arrives.
func acquire(ctx context.Context, client *redlock.Client, o runOptions, sigs <-chan os.Signal, stderr io.Writer) (*redlock.Lock, error) {
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if o.waitSet && o.wait > 0 {
		var cancelTimeout context.CancelFunc
		waitCtx, cancelTimeout = context.WithTimeout(waitCtx, o.wait)
		defer cancelTimeout()
	}
	// A signal ends the wait.
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			cancel(signalError{sig})
		case <-stopped:
		}
	})
	tryOnce := o.waitSet && o.wait == 0
	lock, err := client.TryLock(waitCtx, o.key)
	if !tryOnce && errors.Is(err, redlock.ErrNotObtained) && waitCtx.Err() == nil {
		var nerr *redlock.NodeError
		if errors.As(err, &nerr) {
			fmt.Fprintf(stderr, "redlock: waiting for the lock %q while some nodes fail:\n%v\n", o.key, err)
		}
		lock, err = client.Lock(waitCtx, o.key)
	}
	close(stopped)
	wg.Wait()

	var serr signalError
	if errors.As(context.Cause(waitCtx), &serr) {
		if lock != nil {
			release(lock, o.key, stderr)
		}
		return nil, exitWith(signalExitCode(serr.sig), fmt.Errorf("run: %v while waiting for the lock %q; the command did not run", serr.sig, o.key))
	}
	switch {
	case err == nil:
		return lock, nil
	case !errors.Is(err, redlock.ErrNotObtained):
		return nil, exitWith(exitFailure, fmt.Errorf("run: %w", err))
	case tryOnce:
		return nil, exitWith(exitNotObtained, fmt.Errorf("run: lock %q not obtained in one attempt (--wait 0):\n%w", o.key, err))
	default:
		return nil, exitWith(exitNotObtained, fmt.Errorf("run: lock %q not obtained within %v:\n%w", o.key, o.wait, err))
	}
}

// signalError is the cause of a wait ended by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "received " + e.sig.String() }

// supervise runs CMD while it holds lock, then releases the lock and returns
// the outcome as an *exitError (nil when CMD exited with 0).
func supervise(lock *redlock.Lock, client *redlock.Client, o runOptions, path string, argv []string, sigs <-chan os.Signal, stderr io.Writer) error {
	child := exec.Command(path)
	child.Args = argv
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = os.Environ()
	if o.fencing {
		child.Env = append(child.Env, tokenEnv+"="+strconv.FormatUint(lock.Token(), 10))
	}
	child.SysProcAttr = childSysProcAttr()
	if err := child.Start(); err != nil {
		release(lock, o.key, stderr)
		return exitWith(exitCannotExec, fmt.Errorf("run: %w", err))
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	keepCtx, stopKeep := context.WithCancel(context.Background())
	var keeper sync.WaitGroup
	keeper.Go(func() { keepAlive(keepCtx, lock, client.TTL(), o.key, stderr) })

	var (
		lostDone = lock.Done() // closed when the lock is no longer held; nil once seen
		lost     bool
		kill     <-chan time.Time
		waitErr  error
	)
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		case <-lostDone:
			lost, lostDone = true, nil
			fmt.Fprintf(stderr, "redlock: lost the lock %q while %s ran; sending it SIGTERM (SIGKILL in %v)\n", o.key, argv[0], o.grace)
			_ = terminate(child.Process)
			kill = time.After(o.grace)
		case <-kill:
			kill = nil
			fmt.Fprintf(stderr, "redlock: %s did not exit within %v of SIGTERM; sending SIGKILL\n", argv[0], o.grace)
			_ = child.Process.Kill()
		}
	}
	stopKeep()
	keeper.Wait()
	if !lost {
		// The command ended while the lock was held unless Done had closed
		// by then; when both happened, count it as lost.
		select {
		case <-lock.Done():
			lost = true
		default:
		}
	}
	status := exitStatus(child.ProcessState, waitErr)
	if relErr := release(lock, o.key, stderr); relErr != nil && !lost && lostOnNodes(relErr) {
		return exitWith(exitLockLost, fmt.Errorf("run: when %s exited (status %d), a majority of the nodes no longer held the lock %q: it was lost while the command ran:\n%w",
			argv[0], status, o.key, relErr))
	}
	if lost {
		return exitWith(exitLockLost, fmt.Errorf("run: %s ended with status %d after the lock %q was lost", argv[0], status, o.key))
	}
	if status != 0 {
		return exitWith(status, nil)
	}
	return nil
}

// keepAlive extends lock to ttl every ttl/3 until ctx ends or the lock is no
// longer held, retrying sooner after a failed extension. It reports the
// first failure of a run of failures.
func keepAlive(ctx context.Context, lock *redlock.Lock, ttl time.Duration, key string, stderr io.Writer) {
	every := ttl / 3
	retry := max(every/4, 10*time.Millisecond)
	timer := time.NewTimer(every)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-lock.Done():
			return
		case <-timer.C:
		}
		err := lock.Extend(ctx, ttl)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				fmt.Fprintf(stderr, "redlock: extending the lock %q failed; retrying while it is still valid:\n%v\n", key, err)
			}
			failing = true
			timer.Reset(retry)
		default:
			failing = false
			timer.Reset(every)
		}
	}
}

// release unlocks lock, bounded by releaseTimeout, and reports a failure on
// stderr. It returns Unlock's error.
func release(lock *redlock.Lock, key string, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := lock.Unlock(ctx)
	if err != nil && !lostOnNodes(err) {
		fmt.Fprintf(stderr, "redlock: releasing the lock %q failed; it expires by itself within its TTL:\n%v\n", key, err)
	}
	return err
}

// lostOnNodes reports whether err says that a majority of the nodes answered
// that they no longer held the lock, as opposed to failing to answer.
func lostOnNodes(err error) bool {
	var nerr *redlock.NodeError
	return errors.Is(err, redlock.ErrLockLost) && !errors.As(err, &nerr) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// exitStatus returns the exit status of a command as a shell reports it:
// its exit code, or 128 + N when signal N killed it.
func exitStatus(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		if waitErr != nil {
			return exitFailure
		}
		return exitOK
	}
	if code, ok := signaledStatus(ps); ok {
		return code
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	return exitFailure
}
