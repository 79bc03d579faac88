package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

// The suite passing on a correct node is shown by the memory driver's tests
// (drivers/memory) and by every Redis driver's. Here it must fail on nodes
// that each break one rule, with a message that names the rule.

// broken wraps a correct memory node and breaks one rule.
type broken struct {
	*memory.Node
	kind string
}

func (b broken) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if b.kind == "setnx-overwrites" {
		b.Node.Delete(key)
	}
	return b.Node.SetNX(ctx, key, value, ttl)
}

func (b broken) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if b.kind == "release-others" {
		return b.Node.Delete(key), nil
	}
	return b.Node.EvalRelease(ctx, key, value)
}

func (b broken) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if b.kind == "extend-creates" {
		if ok, err := b.Node.SetNX(ctx, key, value, ttl); ok || err != nil {
			return ok, err
		}
	}
	if b.kind == "ignores-context" {
		ctx = context.Background()
	}
	if b.kind == "extend-half-ttl" {
		ttl /= 2
	}
	return b.Node.Extend(ctx, key, value, ttl)
}

// SetNXFence keeps the key for half its TTL, for "fence-half-ttl".
func (b broken) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	if b.kind == "fence-half-ttl" {
		ttl /= 2
	}
	return b.Node.SetNXFence(ctx, key, value, ttl, fenceKey)
}

// TTL reports a key held by any value as held, for "ttl-any-value".
func (b broken) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	d, held, err := b.Node.TTL(ctx, key, value)
	if b.kind == "ttl-any-value" && err == nil && !held {
		if d, ok := b.Node.PTTL(key); ok {
			return d.Truncate(time.Millisecond), true, nil
		}
	}
	return d, held, err
}

const brokenEnv = "CONFORMANCE_BROKEN_KIND"

// TestBrokenNodeHelper runs the suite on a broken node when started by
// TestSuiteFailsOnBrokenNodes; otherwise it does nothing.
func TestBrokenNodeHelper(t *testing.T) {
	kind := os.Getenv(brokenEnv)
	if kind == "" {
		t.Skip("run by TestSuiteFailsOnBrokenNodes")
	}
	conformance.Run(t, func(t *testing.T) driver.Node { return broken{memory.New(), kind} })
}

func TestSuiteFailsOnBrokenNodes(t *testing.T) {
	for kind, want := range map[string]string{
		"release-others":   "EvalRelease(otherValue) = true, want false: a Node must not release a key held by another value",
		"setnx-overwrites": "SetNX(otherValue) = true, want false: a Node must not set a key held by another value (NX)",
		"extend-creates":   "Extend(absent key) = true, want false: there was nothing to extend",
		"ignores-context":  "Extend(canceled ctx) error = <nil>, want one matching context.Canceled: a Node must honour its context",
		"ttl-any-value":    "want 0, false: a Node must not report a key held by another value",
		"extend-half-ttl":  "a Node must keep an extended key for its whole TTL",
		"fence-half-ttl":   "SetNXFence(ttl=300ms): the key was free after",
	} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenNodeHelper$", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+kind)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed on a node that breaks %q; output:\n%s", kind, out)
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("the suite failed on %q without the message %q; output:\n%s", kind, want, out)
			}
		})
	}
}

// TestExample runs the tests of the package's example (example_test.go).
func TestExample(t *testing.T) {
	t.Run("RunRedis/WithAddress", testQueryDriver)
	t.Run("Run", testNodes)
}
