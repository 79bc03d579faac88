package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
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
with --fencing), $` + nodesEnv + ` included, with any password in it: run
env -u ` + nodesEnv + ` CMD ... if CMD must not see them.

SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent
to run are forwarded to CMD (not to its children: CMD decides), except
SIGINT and SIGQUIT while CMD's process group is the terminal's foreground
group: Ctrl-C and Ctrl-\ reach CMD from the terminal, once (a SIGINT sent
to run alone then is not passed on: stop run from a program with SIGTERM).
Other signals sent to run alone (SIGALRM, SIGPIPE, SIGWINCH, ...) neither
reach CMD nor end run: Go ignores them in a program that does not ask.
SIGHUP or SIGINT ignored when run starts (nohup ignores SIGHUP, a shell
SIGINT in a job it starts in the background) stays ignored, by run and by
CMD, as flock(1) leaves it. No other signal does (Go cannot tell run that
it was ignored): CMD starts with the others at their default, where under
flock(1) it inherits them ignored. A shell ignores SIGQUIT too in a job it
starts in the background: run catches it and forwards it to CMD, which
quits; a SIGTERM or SIGPIPE the caller ignores is not ignored by CMD either.
A signal sent to run's whole process group or
cgroup can reach CMD twice, from the sender and forwarded by run: timeout(1)
without --foreground, kill -- -PGID, a shell's kill %JOB, systemd's default
KillMode=control-group. Signal run alone (timeout --foreground,
KillMode=mixed) for a CMD that quits at once on a second SIGTERM.
A signal while run still waits for the lock ends the wait: CMD never starts
and run exits with 128 + the signal's number. When SIGINT, SIGTERM or SIGHUP
ends the wait or kills CMD, run ends by that signal itself, once the lock is
released, as timeout(1) does, and flock(1) when the signal reaches it too
(it does not catch them): a shell shows 128+N all the same, but bash stops
a script on Ctrl-C only at a command that died of SIGINT, and systemd takes
a service that SIGTERM ended as stopped cleanly, one that exited with 143
as failed. As PID 1 (a container's first process, which the kernel keeps
from dying of its own signal) run exits with 128+N. CMD's own exit status 69, 75
or 76 reads as run's own (see Exit codes below): --conflict-exit-code moves
75. A file without a #! line runs
with /bin/sh, as execvp(3) has it.

Without --wait, run waits for the lock as long as it takes; --wait 0 tries
once, once the nodes have connected (in up to 5s: see --node-timeout), in up
to twice the node timeout when nodes do not answer; a rediss:// node that
timed out is then asked, in up to 0.5s, whether it answers in plaintext (a
server without TLS), which the error says. A --wait
shorter than one attempt still lets that attempt end. With --fencing, CMD finds the lock's fencing token in $` + tokenEnv + `: a
number that rises with every grant of KEY; give it to the resource you
protect and have it refuse tokens lower than the highest it has seen.

If the lock is lost while CMD runs (an extension finds it gone from too many
of the nodes for a quorum, or too many refuse it with an error retrying cannot
fix, at once: a user without +pexpire, a node turned into a replica; or its
validity runs out because the nodes could not be reached), CMD gets SIGTERM, then SIGKILL if it is still running after --grace,
and run exits with 76; the line that says so names how it was lost and each
node whose last extension failed, with its error. Another client may hold
the lock from that moment on, while CMD still runs until it exits (up to
--grace): only a resource that refuses stale fencing tokens (--fencing)
stops what CMD writes meanwhile.
Unlike a flock(1) lock, the lock lives only while run extends it: a job
stopped with Ctrl-Z (SIGTSTP) or SIGSTOP stops run with it, so the lock
expires after one TTL and another client may take it; when the job is
continued, CMD runs on without the lock until run, continued with it, finds
the lock lost and sends it SIGTERM as above.

On Linux, run sees every process CMD starts (it is their subreaper): when
the lock is lost they get SIGTERM and SIGKILL with CMD, and a process that
outlives CMD (a daemon it started, a command whose shell was killed) keeps
the lock held, as a flock(1) lock would be, until it exits; run then exits
with CMD's status. Meanwhile, signals sent to run go to the processes it
adopted from CMD (not to their children), and a stop (SIGINT, SIGTERM,
SIGHUP, SIGQUIT, now or before CMD exited) sends SIGTERM to every one of
them, then SIGKILL after --grace, repeated until none is left. If run itself
is killed (SIGKILL), CMD gets SIGTERM, but what CMD left runs on without the
lock. Elsewhere, or without /proc, run knows CMD alone.

On Windows, which has no signals to send, Ctrl-C and Ctrl-Break reach CMD
from the console, as do the console's close, logoff and shutdown (run takes
them as SIGINT and SIGTERM: a stop, after which it releases the lock once CMD
exits); run forwards nothing, and a lost lock kills CMD at once, without
SIGTERM or --grace.

With -v, run tells on stderr what happens to the lock: "waiting for KEY (held
elsewhere: ...)", "acquired KEY after 1.2s, token 7", failed extensions, the
loss, the release. Without it, run prints only its errors, what it does to
the processes of CMD (SIGTERM, SIGKILL, holding the lock for what CMD left),
once, that it keeps waiting while too many nodes fail for a quorum (unless
--wait 0), and, once a node, a node the lock goes on without for a reason
retrying cannot fix: one that refuses every lock or answers an error to the
extension (NOPERM, READONLY), one that no longer holds KEY, which it held,
or one that does not tell which server it is (see redlock doctor).

Exit codes:
  CMD's own   CMD ran under the lock and exited (128+N if a signal N killed
              it; run ends by SIGINT, SIGTERM and SIGHUP then, see above)
  75          the lock is held elsewhere: not obtained within --wait
              (--conflict-exit-code replaces 75, as flock -E, by any
              code but 69 and 76, which tell other outcomes below)
  69          too many nodes failed (errors, timeouts) for a quorum; not
              at release: a release that so many nodes failed that no
              quorum could confirm it, heard before any said it no longer
              held the lock, is told on stderr and leaves CMD's status
              (the lock expires by itself within its TTL on those nodes)
  76          the lock was lost while CMD (or what it left) ran (they were
              terminated), or on release no quorum of the nodes confirmed
              that they still held it (too many said they no longer did
              for a quorum, or some did and the others failed to answer);
              the line that says so gives CMD's exit status
  126, 127    CMD could not be executed / was not found (checked before the
              lock is taken; an exec that fails anyway releases it)
  128+N       signal N ended the wait for the lock; CMD did not run (run
              ends by SIGINT, SIGTERM and SIGHUP, which shells show as 128+N)
  2           bad flags or arguments, no nodes, a bad address or option,
              or two addresses of one server (or of one cluster)
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
			if o.key == "" && cmd.Flags().Changed("key") {
				// Not "no --key": CMD's first word would become the key.
				return usageErrorf("run: --key is empty: give the lock's name, as in: redlock run --key KEY -- CMD [ARGS...]")
			}
			if o.key == "" && len(args) == 0 {
				return usageErrorf("run: no key and no command: give them as in: redlock run KEY -- CMD [ARGS...]")
			}
			if o.key == "" && cmd.ArgsLenAtDash() == 0 && !slices.Contains(args[1:], "--") {
				// run -- sh -c '...': the "--" meant for CMD came before
				// KEY, so CMD's first word would be the key and CMD run
				// without it (run -- sudo ./job: ./job, without sudo).
				// A KEY that begins with "-" still can: run -- -KEY -- CMD.
				return usageErrorf("run: no KEY before --: %q would be taken for the key and the rest for CMD; give them as in: redlock run KEY -- CMD [ARGS...]", args[0])
			}
			if o.key == "" && len(args) > 1 && strings.HasPrefix(args[1], "-") && args[1] != "--" &&
				(slices.Contains(args[2:], "--") || isFlagOf(cmd, args[1])) {
				// run KEY --wait 0 -- CMD, or run KEY --wait 0 CMD: the flag
				// would be taken for CMD.
				return usageErrorf("run: %q after KEY: run's flags go before KEY, as in: redlock run [flags] KEY -- CMD [ARGS...]", args[1])
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
	f.DurationVar(&o.grace, "grace", defaultGrace, "how long CMD (and, on Linux, what it started) has to exit after SIGTERM when the lock is lost, and on a stop what CMD left behind (a stop is forwarded to CMD, which decides), before SIGKILL")
	return withEnv(cmd)
}

// isFlagOf reports whether arg (which starts with "-") names one of cmd's
// flags, --help and -h included.
func isFlagOf(cmd *cobra.Command, arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	if strings.HasPrefix(arg, "--") {
		return name == "help" || cmd.Flags().Lookup(name) != nil
	}
	return len(name) == 1 && (name == "h" || cmd.Flags().ShorthandLookup(name) != nil)
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
	if _, err := o.addrs("run"); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if errors.Is(err, exec.ErrDot) {
		// Found through "." or an empty element of PATH, which execvp(3),
		// and with it flock(1), honours; os/exec refuses it by default.
		path, err = "./"+path, nil
	}
	if err != nil {
		code := exitNotFound
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
			code = exitCannotExec // found, but cannot be executed, as shells say
		}
		return exitWith(code, fmt.Errorf("run: %w", err))
	}
	if err := missingInterpreter(path); err != nil {
		return exitWith(exitCannotExec, fmt.Errorf("run: %w", err))
	}
	o.cmdName = argv[0]
	return withLock(ctx, "run", &o.lockFlags, stderr, forwardedSignals, func(ctx context.Context, l heldLock) error {
		return supervise(ctx, l, o, path, argv, stderr)
	})
}

// supervise runs CMD while the lock is held: until CMD exits, forwarding
// the signals of l.sigs to it, and terminating it when ctx is canceled
// because the lock was lost. On Linux, run is the subreaper of what CMD
// starts: the processes that CMD leaves behind (a daemon, or a command whose
// shell was killed) are signalled with CMD when the lock is lost, and the
// lock is held until they have exited too (see leftovers). It returns CMD's
// exit status as an *exitError, or nil for 0.
func supervise(ctx context.Context, l heldLock, o runOptions, path string, argv []string, stderr io.Writer) error {
	s := supervisor{o: o, name: argv[0], stderr: stderr, tree: becomeSubreaper(), lost: ctx.Done(), lossCause: l.lossCause}
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
	s.child = child.Process
	exited := make(chan cmdExit, 1)
	var gone chan struct{} // closed when run has no child left (s.tree)
	if s.tree {
		gone = make(chan struct{})
		go reap(child.Process.Pid, exited, gone)
		defer child.Process.Release()
	} else {
		go func() {
			err := child.Wait()
			status, sig := exitStatus(child.ProcessState, err)
			exited <- cmdExit{status: status, signal: sig}
		}()
	}
	var exit cmdExit
loop:
	for {
		select {
		case exit = <-exited:
			break loop
		case sig := <-l.sigs:
			s.stopping = s.stopping || stops(sig)
			if !fromTerminal(sig, child.Process.Pid) { // else CMD got it from the terminal too
				_ = child.Process.Signal(sig)
			}
		case <-s.lost:
			s.lose(fmt.Sprintf("while %s ran; sending it SIGTERM", argv[0]))
		case <-s.kill:
			s.killAll(fmt.Sprintf("%s did not exit", argv[0]))
		}
	}
	if s.tree {
		// Reaped by reap, not by os/exec: where the system has no pidfd,
		// its process ID may be another process's by now.
		s.child = nil
	}
	if exit.leftovers {
		s.leftovers(l.sigs, gone)
	} else if gone != nil {
		<-gone // at once: no child is left
	}
	switch {
	case exit.signal != 0:
		// Killed by it: run ends by it too, where it can (see
		// dieSignals).
		return &exitError{code: exit.status, signal: exit.signal}
	case exit.status != 0:
		return exitWith(exit.status, nil)
	}
	return nil
}

// cmdExit is how CMD ended: its exit status as a shell reports it, the
// signal that killed it (0 if it exited), and whether processes it started
// still run (Linux: see reap).
type cmdExit struct {
	status    int
	signal    syscall.Signal
	leftovers bool
}

// A supervisor is what supervise knows of CMD and of the processes it
// started.
type supervisor struct {
	o      runOptions
	name   string // CMD's
	stderr io.Writer
	tree   bool        // run is the subreaper of CMD's processes (Linux)
	child  *os.Process // CMD's
	lost   <-chan struct{}
	// lossCause says why the lock was lost (see lockEvents.lossCause).
	lossCause func() string
	kill      <-chan time.Time // --grace after SIGTERM, then again every killAgain
	killing   bool             // SIGKILL was sent
	stopping  bool             // a signal asked run to stop
}

// killAgain is how often run sends SIGKILL again to what is left of CMD's
// processes once it has sent it: a process forked while run walked the tree
// escaped the first.
const killAgain = 100 * time.Millisecond

// stops reports whether sig asks a job to end: one of stopSignals.
func stops(sig os.Signal) bool { return slices.Contains(stopSignals, sig) }

// lose terminates CMD (and, on Linux, every process it started) because the
// lock was lost, and arms SIGKILL after --grace.
func (s *supervisor) lose(what string) {
	s.lost = nil
	msg := fmt.Sprintf("redlock: run: lost the lock %q %s (SIGKILL in %v)", s.o.key, what, s.o.grace)
	if cause := s.lossCause(); cause != "" {
		msg += ": " + cause
	}
	fmt.Fprintln(s.stderr, msg)
	s.signalAll(sigTerm)
	s.armKill()
}

func (s *supervisor) armKill() {
	if s.kill == nil {
		s.kill = time.After(s.o.grace)
	}
}

// killAll kills CMD and the processes it started, --grace after SIGTERM,
// and again every killAgain until none is left.
func (s *supervisor) killAll(who string) {
	if !s.killing {
		fmt.Fprintf(s.stderr, "redlock: run: %s within %v of SIGTERM; sending SIGKILL\n", who, s.o.grace)
		s.killing = true
	}
	s.signalAll(sigKill)
	s.kill = time.After(killAgain)
}

// signalAll sends sig to CMD and, on Linux, to every process it started
// (once CMD has exited, to those it left).
func (s *supervisor) signalAll(sig syscall.Signal) {
	if s.tree && signalTree(sig) > 0 || s.child == nil {
		return
	}
	if sig == sigKill {
		_ = s.child.Kill()
	} else {
		_ = terminate(s.child)
	}
}

// leftovers holds the lock, after CMD exited, until the processes it left
// behind (run's children now: see becomeSubreaper) have exited and gone is
// closed (see reap), as flock(1)
// holds its lock while any process that inherited it runs: the lock is
// extended meanwhile. The processes run adopted get the signals sent to
// run; when run is (or was) asked to stop, or the lock is lost, every one
// gets SIGTERM, and SIGKILL after --grace, again until none is left.
func (s *supervisor) leftovers(sigs <-chan os.Signal, gone <-chan struct{}) {
	if s.lost == nil {
		fmt.Fprintf(s.stderr, "redlock: run: %s exited; the lock %q is lost: waiting for the processes it left to exit\n", s.name, s.o.key)
	} else {
		fmt.Fprintf(s.stderr, "redlock: run: %s exited; holding the lock %q until the processes it left have exited\n", s.name, s.o.key)
	}
	if s.stopping && s.lost != nil {
		s.stop()
	}
	for {
		select {
		case <-gone:
			return
		case sig := <-sigs:
			switch {
			case stops(sig):
				if !s.stopping {
					s.stopping = true
					s.stop()
				}
			case !fromTerminal(sig, os.Getpid()): // else they got it from the terminal
				// As CMD's own signals: to the processes run adopted,
				// which decide for theirs.
				if ss, ok := sig.(syscall.Signal); ok {
					signalChildren(ss)
				}
			}
		case <-s.lost:
			s.lose("while processes left by " + s.name + " ran; sending them SIGTERM")
		case <-s.kill:
			s.killAll("the processes " + s.name + " left did not exit")
		}
	}
}

// stop asks the processes CMD left to end, as run was asked to: SIGTERM to
// every one of them, and SIGKILL after --grace.
func (s *supervisor) stop() {
	fmt.Fprintf(s.stderr, "redlock: run: asked to stop: sending them SIGTERM (SIGKILL in %v)\n", s.o.grace)
	s.signalAll(sigTerm)
	s.armKill()
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
// its exit code, or 128 + N when signal N killed it, and then N.
func exitStatus(ps *os.ProcessState, waitErr error) (int, syscall.Signal) {
	if ps == nil {
		if waitErr != nil {
			return exitFailure, 0
		}
		return exitOK, 0
	}
	if code, sig, ok := signaledStatus(ps); ok {
		return code, sig
	}
	if code := ps.ExitCode(); code >= 0 {
		return code, 0
	}
	return exitFailure, 0
}
