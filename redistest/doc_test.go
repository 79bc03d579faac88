package redistest_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// redistestDoc returns the documentation of package redistest as go doc and
// pkg.go.dev build it: from the package's own files, without its tests.
func redistestDoc(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/go-redlock/redlock/redistest")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The methods of the package's types are in its documentation: go doc
// redistest Server must list Kill, Pause, Restart, Do... A type alias of a
// type of another package shows none of them, and the link [Server.Kill]
// in the package's documentation leads nowhere.
func TestDocShowsMethods(t *testing.T) {
	p := redistestDoc(t)
	for typ, want := range map[string][]string{
		"Server":    {"Addr", "Certs", "Close", "Do", "Kill", "Pause", "Restart", "RestartAfter", "Resume", "Running", "URL", "Unread"},
		"Cluster":   {"Close", "MigrateSlot", "Seeds", "Servers", "SetAnnouncePort", "Shards", "SlotShard", "StartMigration", "URL", "WaitHealthy"},
		"Shard":     {"ID", "Index", "Primary", "Replicas", "Slots"},
		"Migration": {"Finish", "From", "MoveKeys", "Slot", "To"},
		"Certs":     {"ClientConfig"},
	} {
		i := slices.IndexFunc(p.Types, func(d *doc.Type) bool { return d.Name == typ })
		if i < 0 {
			t.Errorf("go doc redistest: no type %s", typ)
			continue
		}
		var got []string
		for _, m := range p.Types[i].Methods {
			got = append(got, m.Name)
		}
		for _, m := range want {
			if !slices.Contains(got, m) {
				t.Errorf("go doc redistest %s lists the methods %q, not %s: a user cannot find the method in the package's documentation", typ, got, m)
			}
		}
	}
}
