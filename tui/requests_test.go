package tui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// rootFiles are the root model's own files: only they may name *Model.
// Everything else (views, modals, actions) asks the root with the typed
// messages of requests.go.
var rootFiles = map[string]bool{
	"model.go": true, "model_input.go": true, "model_feed.go": true, "model_store.go": true, "model_view.go": true, "nav.go": true, "action.go": true, "requests.go": true, "commands.go": true,
}

// TestViewsTalkToTheRootByMessages: no view, modal or action holds or
// builds a function of the root model (a closure that writes its fields);
// they send requests.go's messages.
func TestViewsTalkToTheRootByMessages(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || rootFiles[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		qualified := map[*ast.Ident]bool{} // textinput.Model and the like
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				qualified[sel.Sel] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "Model" && !qualified[id] {
				t.Errorf("%s: names the root model: send a request message (requests.go) instead", fset.Position(id.Pos()))
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files: the test does not see the package", checked)
	}
}
