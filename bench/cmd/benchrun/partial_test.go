//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/bench/benchrun"
)

// TestTerminatedKeepsResults: a run stopped by SIGTERM (or Ctrl-C) once it
// has measured something prints the report of what it measured, marked
// incomplete, writes it to -json and to an -out directory given, and exits
// 1. Before, it printed only the error, and the runs made were lost (an
// outside check).
func TestTerminatedKeepsResults(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	jsonFile := filepath.Join(tmp, "report.json")
	code, md, stderr := termWhen(t, tmp, "[  1/20]", 2*time.Minute,
		"-bench", "^BenchmarkLock$/^rueidis$/^nodes=1$/^lockers=1$", "-benchtime", "3x", "-rounds", "20",
		"-no-peers", "-out", out, "-json", jsonFile)
	if code != 1 {
		t.Errorf("benchrun after SIGTERM: exit %d, want 1\nstderr:\n%s", code, stderr)
	}
	for _, want := range []string{"# Benchmark results", "**Incomplete:**", "of 20 runs", "| **rueidis** |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report printed after SIGTERM lacks %q:\n%s\nstderr:\n%s", want, md, stderr)
		}
	}
	if written, err := os.ReadFile(filepath.Join(out, benchrun.ResultsFile)); err != nil || string(written) != md {
		t.Errorf("-out %s: %s not written as printed (%v)", out, benchrun.ResultsFile, err)
	}
	if svg, err := os.ReadFile(filepath.Join(out, benchrun.ChartFile)); err != nil || !strings.Contains(string(svg), "incomplete: stopped") {
		t.Errorf("-out %s: %s does not say the run is incomplete (%v)", out, benchrun.ChartFile, err)
	}
	var rep benchrun.Report
	if data, err := os.ReadFile(jsonFile); err != nil || json.Unmarshal(data, &rep) != nil || rep.Incomplete == "" || len(rep.Results) != 1 || len(rep.Results[0].Samples) == 0 {
		t.Errorf("-json: %v; want the measured result, marked incomplete: %+v", err, rep)
	}
	if !strings.Contains(stderr.String(), "incomplete") {
		t.Errorf("stderr does not say the report is incomplete:\n%s", stderr)
	}
}
