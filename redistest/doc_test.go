package redistest_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
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

// Every doc link in the package's documentation ([Server.Kill], [NewServer])
// names something of the package or an import: go doc prints one that does
// not as it is written, brackets included, and pkg.go.dev links it nowhere.
func TestDocLinksResolve(t *testing.T) {
	p := redistestDoc(t)
	docs := map[string]string{"package": p.Doc}
	add := func(name, text string) { docs[name] = text }
	for _, v := range append(p.Consts, p.Vars...) {
		add(strings.Join(v.Names, ", "), v.Doc)
	}
	for _, f := range p.Funcs {
		add(f.Name, f.Doc)
	}
	for _, typ := range p.Types {
		add(typ.Name, typ.Doc)
		for _, v := range append(typ.Consts, typ.Vars...) {
			add(strings.Join(v.Names, ", "), v.Doc)
		}
		for _, f := range append(typ.Funcs, typ.Methods...) {
			add(typ.Name+"."+f.Name, f.Doc)
		}
	}
	unresolved := regexp.MustCompile(`\[\*?[A-Za-z_][\w.]*\]`)
	for name, text := range docs {
		var walk func(comment.Text)
		walk = func(x comment.Text) {
			switch x := x.(type) {
			case comment.Plain:
				if m := unresolved.FindString(string(x)); m != "" {
					t.Errorf("the documentation of %s links %s, which names nothing go doc can find", name, m)
				}
			case comment.Italic:
				walk(comment.Plain(x))
			case *comment.Link:
				for _, y := range x.Text {
					walk(y)
				}
			}
		}
		for _, b := range p.Parser().Parse(text).Content {
			var texts []comment.Text
			switch b := b.(type) {
			case *comment.Paragraph:
				texts = b.Text
			case *comment.Heading:
				texts = b.Text
			case *comment.List:
				for _, item := range b.Items {
					for _, c := range item.Content {
						if para, ok := c.(*comment.Paragraph); ok {
							texts = append(texts, para.Text...)
						}
					}
				}
			}
			for _, x := range texts {
				walk(x)
			}
		}
	}
}
