package redlock_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEProgramsCompile keeps the programs of the README and of
// docs/MIGRATING.md true to the API: every ```go block that is a whole program
// (it starts with "package") is vetted in a throwaway module, outside the
// source tree, that uses this checkout, and a block that is a test file (it
// has a func Test) is run there with go test.
func TestREADMEProgramsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var programs []string
	for _, doc := range []string{"README.md", filepath.Join("docs", "MIGRATING.md")} {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for rest := string(text); ; {
			var block string
			var ok bool
			if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
				break
			}
			if block, rest, ok = strings.Cut(rest, "```"); !ok {
				t.Fatalf("%s has an unterminated ```go block", doc)
			}
			if strings.HasPrefix(block, "package ") {
				programs = append(programs, block)
				found = true
			}
		}
		if !found {
			t.Fatalf("%s has no ```go block with a whole program", doc)
		}
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module readme\n\ngo 1.26.0\n\nrequire github.com/go-redlock/redlock v0.0.0\n\nreplace github.com/go-redlock/redlock => %s\n", root)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tests []string
	for i, code := range programs {
		sub := fmt.Sprintf("program%d", i+1)
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		file := "main.go"
		if strings.Contains(code, "\nfunc Test") {
			file = "readme_test.go"
			tests = append(tests, "./"+sub)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, file), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		return cmd.CombinedOutput()
	}
	if out, err := goCmd("vet", "./..."); err != nil {
		t.Fatalf("a program of the README or docs/MIGRATING.md does not compile: %v\n%s", err, out)
	}
	if len(tests) > 0 {
		if out, err := goCmd(append([]string{"test", "-count=1"}, tests...)...); err != nil {
			t.Fatalf("a test file of the README fails: %v\n%s", err, out)
		}
	}
}
