package safety_test

import (
	"flag"
	"os"
	"testing"
)

// parallel is how many scenarios run at once unless -parallel is given. The
// scenarios spend most of their time waiting (TTLs, node timeouts, delayed
// restarts) rather than computing, so the default of GOMAXPROCS would leave
// a small machine idle; the two that do compute, the contention of scenario
// 1 and the soak, are not parallel and run alone first.
const parallel = "6"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", parallel); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
