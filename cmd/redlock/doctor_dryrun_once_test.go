package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
)

// doctor's permissions check asks ACL DRYRUN of each command once: the GET of
// the fencing counter, which fencing (--fencing) and status both need, is
// asked once and its answer told for each, here a user who may not read the
// counter: both warnings, from one DRYRUN.
func TestDoctorDryRunAsksEachOnce(t *testing.T) {
	o := doctorOptions{key: "k", prefix: "p:", ttl: 30 * time.Second}
	fk := driver.PrefixFenceKey(o.prefix, o.key)
	asked := map[string]int{}
	call := func(args ...any) *redis.Cmd {
		cmd := redis.NewCmd(context.Background(), args...)
		text := fmt.Sprint(args...)
		switch {
		case len(args) == 2 && args[0] == "ACL" && args[1] == "WHOAMI":
			cmd.SetVal("u")
		case len(args) > 3 && args[0] == "ACL" && args[1] == "DRYRUN":
			asked[fmt.Sprint(args[3:])]++
			if args[3] == "GET" && args[4] == fk {
				cmd.SetVal("This user has no permissions to access the '" + fk + "' key")
			} else {
				cmd.SetVal("OK")
			}
		default:
			cmd.SetErr(fmt.Errorf("unexpected command %s", text))
		}
		return cmd
	}
	var n nodeReport
	checkPermissions(&n, call, func(string) error { return nil }, o, nil)
	for args, times := range asked {
		if times != 1 {
			t.Errorf("ACL DRYRUN u %s asked %d times, want once", args, times)
		}
	}
	var fencing, status bool
	for _, c := range n.Checks {
		if c.Status != statusWarn {
			continue
		}
		fencing = fencing || strings.Contains(c.Message, "may not keep fencing counters") && strings.Contains(c.Message, "GET (This user has no permissions")
		status = status || strings.Contains(c.Message, "may not read the fencing counter")
	}
	if !fencing || !status {
		t.Errorf("a user who may not GET the counter: fencing warned %v, status warned %v, want both; checks %+v", fencing, status, n.Checks)
	}
}
