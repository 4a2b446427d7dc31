package algo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsNameEveryFunction keeps docs/algorithms.md and doc.go's table in step with the
// package: each exported function (and Overlong.Penalty) must be named in both.
func TestDocsNameEveryFunction(t *testing.T) {
	page, err := os.ReadFile("../../docs/algorithms.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || strings.HasPrefix(fn.Name.Name, "Parse") || strings.HasPrefix(fn.Name.Name, "Default") {
				continue
			}
			if fn.Recv != nil && fn.Name.Name != "Penalty" {
				continue
			}
			if !strings.Contains(string(page), fn.Name.Name) {
				t.Errorf("docs/algorithms.md does not name %s (%s)", fn.Name.Name, f)
			}
			if !strings.Contains(string(table), fn.Name.Name) {
				t.Errorf("doc.go's table does not name %s (%s)", fn.Name.Name, f)
			}
		}
	}
}
