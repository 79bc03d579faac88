package attemptcap_test

import (
	"errors"
	"testing"

	"github.com/go-redlock/redlock/internal/attemptcap"
)

func TestError(t *testing.T) {
	for made, want := range map[int]string{
		1: "gave up after 1 attempt (WithMaxAttempts)",
		3: "gave up after 3 attempts (WithMaxAttempts)",
	} {
		if got := (&attemptcap.Error{Made: made}).Error(); got != want {
			t.Errorf("Made %d: %q, want %q", made, got, want)
		}
	}
}

func TestWithout(t *testing.T) {
	verdict := errors.New("lock not obtained")
	other := errors.New("a node failed")
	capped := &attemptcap.Error{Made: 1}
	if got := attemptcap.Without(errors.Join(verdict, capped)); got != verdict {
		t.Errorf("Without(verdict + cap) = %v, want the verdict alone", got)
	}
	got := attemptcap.Without(errors.Join(verdict, other, capped))
	if !errors.Is(got, verdict) || !errors.Is(got, other) || got.Error() != "lock not obtained\na node failed" {
		t.Errorf("Without(verdict + other + cap) = %q, want the verdict and the other", got)
	}
	var ce *attemptcap.Error
	if errors.As(got, &ce) {
		t.Errorf("Without left the cap in: %q", got)
	}
	if err := errors.Join(verdict, other); attemptcap.Without(err) != err {
		t.Error("Without changed a join with no cap in it")
	}
	if attemptcap.Without(verdict) != verdict {
		t.Error("Without changed an error that is no join")
	}
	if attemptcap.Without(nil) != nil {
		t.Error("Without(nil) is not nil")
	}
}
