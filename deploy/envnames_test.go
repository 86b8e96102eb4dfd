package deploy

// The environment variables a binary reads, derived from its source: the
// Kubernetes test refuses a manifest that sets a variable no binary of the
// container reads (a misspelt name is otherwise silently ignored).

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	modulePrefix     = "blockspace.exchange/"
	configImportPath = modulePrefix + "platform/config"
)

// envName is the shape of every variable name the binaries read.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// envVarsRead returns the variables the main package in dir (relative to
// the repository root) and every package of the workspace it imports read:
// the first argument of a *config.Reader method (String, Int, Duration…),
// a name passed together with a reader to a helper (ingress's Rate.fromEnv),
// and os.Getenv, os.LookupEnv or a getenv function value called with a
// literal name.
func envVarsRead(t *testing.T, root, dir string) map[string]bool {
	t.Helper()
	methods := readerMethods(t, root)
	names := map[string]bool{}
	seen := map[string]bool{}
	var visit func(dir string)
	visit = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		for _, f := range parsePackage(t, filepath.Join(root, dir)) {
			collectEnvNames(f, methods, names)
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(path, modulePrefix); ok {
					visit(rest)
				}
			}
		}
	}
	visit(dir)
	return names
}

// readerMethods lists the methods of config.Reader whose first parameter
// is the variable's name, from platform/config itself.
func readerMethods(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range parsePackage(t, filepath.Join(root, "platform/config")) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Type.Params.List) == 0 {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok || !isIdent(star.X, "Reader") {
				continue
			}
			first := fn.Type.Params.List[0]
			if len(first.Names) > 0 && first.Names[0].Name == "name" && isIdent(first.Type, "string") {
				out[fn.Name.Name] = true
			}
		}
	}
	if !out["String"] || !out["Duration"] {
		t.Fatalf("platform/config: found reader methods %v, want String, Duration and the others", out)
	}
	return out
}

func parsePackage(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// collectEnvNames adds the names read in one file. Readers are the
// parameters, receivers and variables of each function whose type is
// *config.Reader (*Reader inside package config).
func collectEnvNames(f *ast.File, methods, names map[string]bool) {
	configName := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == configImportPath {
			configName = "config"
			if imp.Name != nil {
				configName = imp.Name.Name
			}
		}
	}
	inConfig := f.Name.Name == "config"
	isReaderType := func(e ast.Expr) bool {
		star, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		if inConfig {
			return isIdent(star.X, "Reader")
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		return ok && configName != "" && isIdent(sel.X, configName) && sel.Sel.Name == "Reader"
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		readers := map[string]bool{}
		for _, list := range []*ast.FieldList{fn.Recv, fn.Type.Params} {
			if list == nil {
				continue
			}
			for _, field := range list.List {
				if isReaderType(field.Type) {
					for _, n := range field.Names {
						readers[n.Name] = true
					}
				}
			}
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, rhs := range as.Rhs {
					if call, ok := rhs.(*ast.CallExpr); ok && isSelector(call.Fun, configName, "FromEnv", "FromMap") {
						if id, ok := as.Lhs[i].(*ast.Ident); ok {
							readers[id.Name] = true
						}
					}
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch {
			case isSelector(call.Fun, "os", "Getenv", "LookupEnv"), isIdent(call.Fun, "getenv"):
				addLiteral(call.Args, 0, names)
			case isReaderCall(call, readers, methods):
				addLiteral(call.Args, 0, names)
			case passesReader(call, readers):
				for i := range call.Args {
					addLiteral(call.Args, i, names)
				}
			}
			return true
		})
	}
}

func isReaderCall(call *ast.CallExpr, readers, methods map[string]bool) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || !methods[sel.Sel.Name] {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && readers[id.Name]
}

func passesReader(call *ast.CallExpr, readers map[string]bool) bool {
	return slices.ContainsFunc(call.Args, func(a ast.Expr) bool {
		id, ok := a.(*ast.Ident)
		return ok && readers[id.Name]
	})
}

func addLiteral(args []ast.Expr, i int, names map[string]bool) {
	if i >= len(args) {
		return
	}
	lit, ok := args[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return
	}
	if v, err := strconv.Unquote(lit.Value); err == nil && envName.MatchString(v) {
		names[v] = true
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func isSelector(e ast.Expr, pkg string, names ...string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && pkg != "" && isIdent(sel.X, pkg) && slices.Contains(names, sel.Sel.Name)
}

// TestEnvVarsReadFromSource: the derivation finds what each binary is
// known to read, and nothing another binary reads that it does not.
func TestEnvVarsReadFromSource(t *testing.T) {
	root := repoRoot(t)
	for _, tc := range []struct {
		dir       string
		want, not []string
	}{
		{"ingress/cmd/ingress", []string{"KAFKA_BROKERS", "SHUTDOWN_GRACE", "DEV_GENESIS", "AUTH_SIGNING_KEY_FILE", "AUTH_LOGIN_RATE_PER_IP", "ORDERFLOW_BURST_PER_SENDER", "ORDER_ANSWER_WAIT", "SLOT_CLOCK"}, []string{"MATCHER_INSTANCE_ID", "SETTLER_INSTANCE_ID"}},
		{"matcher/cmd/matcher", []string{"ADMIN_ADDR", "MATCHER_INSTANCE_ID", "MATCHER_STATIC_MEMBER", "MATCHER_SNAPSHOT_EVERY"}, []string{"HTTP_ADDR", "AUTH_SIGNING_KEY_FILE"}},
		{"settler/cmd/settler", []string{"DATABASE_URL", "SETTLER_INSTANCE_ID", "WITHDRAW_OPERATOR_KEY_FILE"}, []string{"MATCHER_INSTANCE_ID"}},
		{"orderflow-relay/cmd/orderflow-relay", []string{"SEARCHER_WS_ADDR", "REFUND_PAYER_KEY", "BUILDER_URLS"}, []string{"HTTP_ADDR"}},
		{"query-api/cmd/query-api", []string{"HTTP_ADDR", "ORDERFLOW_ADDR", "REFERENCE_REFRESH"}, []string{"CHAIN_RPC_URL"}},
		{"deploy/cmd/topicctl", []string{"KAFKA_BROKERS"}, []string{"DATABASE_URL"}},
	} {
		got := envVarsRead(t, root, tc.dir)
		for _, v := range tc.want {
			if !got[v] {
				t.Errorf("%s: %s not found among the variables it reads", tc.dir, v)
			}
		}
		for _, v := range tc.not {
			if got[v] {
				t.Errorf("%s: %s found, but the binary does not read it", tc.dir, v)
			}
		}
	}
}
