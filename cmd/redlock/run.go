package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/internal/deathsig"
)

// tokenEnv is the environment variable in which run gives its command the
// fencing token.
const tokenEnv = "REDLOCK_TOKEN"

// defaultGrace is how long run waits, after it lost the lock and sent
// SIGTERM, before it kills its command.
const defaultGrace = 10 * time.Second

type runOptions struct {
	lockFlags
	grace time.Duration
}

func runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] KEY -- CMD [ARGS...]",
		Short: "Run a command while holding a lock",
		Long: `run acquires the lock KEY on the nodes, runs CMD while holding it, and
releases it when CMD exits: like flock(1) or etcdctl lock, but across
machines. The lock is extended every TTL/3 while CMD runs, so CMD may run for
longer than the TTL; if run dies, the lock expires after at most one TTL (and
on Linux CMD gets SIGTERM). --key KEY is another way to name the lock; then
every argument is CMD's.

CMD inherits stdin, stdout, stderr and the environment ($` + tokenEnv + ` only
with --fencing). SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent
to run are forwarded to CMD (only to CMD, not to its children), except
SIGINT and SIGQUIT while CMD's process group is the terminal's foreground
group: Ctrl-C and Ctrl-\ reach CMD from the terminal, once (a SIGINT sent
to run alone then is not passed on: stop run from a program with SIGTERM).
A signal while run still waits for the lock ends the wait: CMD never starts
and run exits with 128 + the signal's number. A file without a #! line runs
with /bin/sh, as execvp(3) has it.

Without --wait, run waits for the lock as long as it takes; --wait 0 tries
once. With --fencing, CMD finds the lock's fencing token in $` + tokenEnv + `: a
number that rises with every grant of KEY; give it to the resource you
protect and have it refuse tokens lower than the highest it has seen.

If the lock is lost while CMD runs (an extension finds it gone from a
majority of the nodes, or its validity runs out because the nodes could not be
reached), CMD gets SIGTERM, then SIGKILL if it is still running after --grace,
and run exits with 76. Another client may hold the lock from that moment on.

With -v, run tells on stderr what happens to the lock: "waiting for KEY (held
elsewhere)", "acquired KEY after 1.2s, token 7", failed extensions, the loss.
Without it, run prints only its errors, and, once, that it keeps waiting while
too many nodes fail for a quorum (unless --wait 0).

Exit codes:
  CMD's own   CMD ran under the lock and exited (128+N if a signal N killed it)
  75          the lock is held elsewhere: not obtained within --wait
              (--conflict-exit-code replaces 75, as flock -E)
  69          too many nodes failed (errors, timeouts) for a quorum
  76          the lock was lost while CMD ran (CMD was terminated), or on
              release a majority of the nodes no longer held it
  126, 127    CMD could not be executed / was not found (checked before the
              lock is taken; an exec that fails anyway releases it)
  128+N       signal N ended the wait for the lock; CMD did not run
  2           bad flags or arguments, no nodes, a bad address or option
  1           any other error of redlock (such as nodes that refuse the user)

` + envHelp("nodes", "ttl", "wait", "prefix", "driver", "fencing", "grace", "conflict-exit-code", "verbose"),
		Example: `  # one nightly report at a time, across every machine that runs this
  redlock run --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 nightly-report -- ./report.sh

  # nodes from the environment; give up at once if someone else holds it
  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  redlock run --wait 0 deploy -- make deploy || echo "exit $?: 75 means busy, 69 unreachable"

  # wait up to a minute; pass the fencing token on to the protected store
  redlock run --wait 1m --fencing invoices -- sh -c 'import-invoices --fence "$REDLOCK_TOKEN"'

  # as flock -E 0: a busy lock is not an error; say what happens
  redlock run -v --wait 0 --conflict-exit-code 0 cleanup -- ./cleanup.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.key == "" && len(args) == 0 {
				return usageErrorf("run: no key and no command: give them as in: redlock run KEY -- CMD [ARGS...]")
			}
			if _, argv := runArgs(o.key, args); len(argv) == 0 {
				return usageErrorf("run: no command: give it after --, as in: redlock run KEY -- CMD [ARGS...]")
			}
			return nil
		},
		// KEY is a name, not a file; CMD and its arguments complete as the
		// shell does.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if o.key == "" && len(args) == 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.key, args = runArgs(o.key, args)
			if err := o.check(cmd, "run"); err != nil {
				return err
			}
			return runLocked(cmd.Context(), o, args, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything from KEY on belongs to run's KEY and CMD
	o.add(cmd)
	f.StringVar(&o.key, "key", "", "the lock's name, instead of KEY; every argument is then CMD's (not from the environment)")
	// From the environment, --key would turn KEY into CMD.
	f.SetAnnotation("key", noEnv, []string{"true"})
	f.DurationVar(&o.grace, "grace", defaultGrace, "after the lock is lost, how long CMD has to exit after SIGTERM before SIGKILL")
	return withEnv(cmd)
}

// runArgs splits run's arguments into the key (unless --key gave it) and
// CMD with its arguments. Flags end at the first argument, so a "--" after
// KEY is still there, and is dropped.
func runArgs(key string, args []string) (string, []string) {
	if key == "" && len(args) > 0 {
		key, args = args[0], args[1:]
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
	}
	return key, args
}

// runLocked is the run command: it returns an *exitError for every outcome
// but success.
func runLocked(ctx context.Context, o runOptions, argv []string, stderr io.Writer) error {
	if o.grace < 0 {
		return usageErrorf("run: --grace %v is negative", o.grace)
	}
	if _, err := o.addrs(); err != nil {
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
	return withLock(ctx, "run", &o.lockFlags, stderr, forwardedSignals, func(ctx context.Context, l heldLock) error {
		return supervise(ctx, l, o, path, argv, stderr)
	})
}

// supervise runs CMD while the lock is held: until CMD exits, forwarding
// the signals of l.sigs to it, and terminating it when ctx is canceled
// because the lock was lost. It returns CMD's exit status as an *exitError,
// or nil for 0.
func supervise(ctx context.Context, l heldLock, o runOptions, path string, argv []string, stderr io.Writer) error {
	env := childEnv(os.Environ(), o.fencing, l.token)
	child, err := startChild(path, argv, env)
	if err != nil && execFormat(err) {
		// A file the kernel cannot execute (no #! line) is a script for
		// the shell, as execvp(3) has it.
		child, err = startChild("/bin/sh", append([]string{"sh", path}, argv[1:]...), env)
	}
	if err != nil {
		return exitWith(exitCannotExec, fmt.Errorf("run: %w", err))
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	var (
		lostDone = ctx.Done() // canceled when the lock is lost; nil once seen
		kill     <-chan time.Time
		waitErr  error
	)
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case sig := <-l.sigs:
			if !fromTerminal(sig, child.Process.Pid) { // else CMD got it from the terminal too
				_ = child.Process.Signal(sig)
			}
		case <-lostDone:
			lostDone = nil
			fmt.Fprintf(stderr, "redlock: run: lost the lock %q while %s ran; sending it SIGTERM (SIGKILL in %v)\n", o.key, argv[0], o.grace)
			_ = terminate(child.Process)
			kill = time.After(o.grace)
		case <-kill:
			kill = nil
			fmt.Fprintf(stderr, "redlock: run: %s did not exit within %v of SIGTERM; sending SIGKILL\n", argv[0], o.grace)
			_ = child.Process.Kill()
		}
	}
	if status := exitStatus(child.ProcessState, waitErr); status != 0 {
		return exitWith(status, nil)
	}
	return nil
}

// startChild starts path with argv and env, with run's stdin, stdout and
// stderr. Where the system can (Linux), the kernel sends it SIGTERM if run
// dies, even by SIGKILL: nobody extends the lock any more, so it must stop.
func startChild(path string, argv, env []string) (*exec.Cmd, error) {
	child := exec.Command(path)
	child.Args = argv
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = env
	return child, deathsig.Start(child, syscall.SIGTERM)
}

// childEnv is CMD's environment: run's, with $REDLOCK_TOKEN set to token
// with fencing, and removed without it, so that CMD never takes a token
// from elsewhere (an outer run's, say) for this lock's.
func childEnv(environ []string, fencing bool, token uint64) []string {
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, tokenEnv+"=") {
			env = append(env, kv)
		}
	}
	if fencing {
		env = append(env, tokenEnv+"="+strconv.FormatUint(token, 10))
	}
	return env
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
