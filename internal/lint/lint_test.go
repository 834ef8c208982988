package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/weirstream/weir"

// The import paths (and their subpackages) the policies name.
const (
	sarama     = "github.com/IBM/sarama"
	franz      = "github.com/twmb/franz-go"
	badger     = "github.com/dgraph-io/badger"
	network    = "net"
	osExec     = "os/exec"
	testingPkg = "testing"
	serde      = module + "/serde"

	// weir's own layers.
	kafkaAdapter = module + "/internal/kafka"
	txnAdapter   = module + "/internal/txn"
	epochs       = module + "/internal/engine/epochs"
	batches      = module + "/internal/engine/batches"
	continuous   = module + "/continuous"
	microbatch   = module + "/microbatch"
	queryServer  = module + "/internal/query"
)

// policies says, per package, what its production code (tests excluded)
// may not depend on, and why. Packages are relative to the module; "..."
// is every package of the module but examples/ (programs, written as a
// user writes them) and the except list.
var policies = []struct {
	pkgs      []string
	except    []string
	forbidden []string
	// direct checks only the package's own imports; otherwise every
	// package it depends on, directly or not, is checked.
	direct bool
	// noClock forbids reading the wall clock (time.Now, timers, sleeps).
	noClock bool
	why     string
}{{
	pkgs:      []string{"processor", "topology", "serde", "statestore", "topologytest"},
	forbidden: []string{sarama, badger, franz, network, osExec},
	noClock:   true,
	why: "the processing core is pure (docs/design.md §2): no Kafka client, no storage engine, no network; " +
		"time comes from records or an injected clock, so a replay and the test driver are exact",
}, {
	pkgs:      []string{"statestore"},
	forbidden: []string{serde},
	why:       "typed store views take a Codec, so store engines do not depend on weir's serdes",
}, {
	pkgs:      []string{"offsets", "statestore/badgerstore", "internal/badgerlog"},
	forbidden: []string{sarama, franz, kafkaAdapter, txnAdapter},
	why:       "the WAL and the stores keep progress and state on disk; the engines talk to Kafka",
}, {
	pkgs:      []string{"internal/engine/tasks"},
	forbidden: []string{epochs, batches, continuous, microbatch, queryServer},
	why: "the tasks package (tasks, stores, commits) serves the engines and the query server; " +
		"they call it, never the other way round",
}, {
	pkgs:      []string{"internal/query"},
	forbidden: []string{epochs, batches, continuous, microbatch},
	why:       "the query server reads the tasks' stores, whichever engine runs them",
}, {
	pkgs:      []string{"internal/engine/epochs", "continuous"},
	forbidden: []string{batches, microbatch},
	why:       "the two engines are independent: the continuous engine does not use the micro-batch one",
}, {
	pkgs:      []string{"internal/engine/batches", "microbatch"},
	forbidden: []string{epochs, continuous},
	why:       "the two engines are independent: the micro-batch engine does not use the continuous one",
}, {
	pkgs:      []string{"..."},
	except:    []string{"internal/kafkatest", "internal/engine/tasks/taskstest"},
	forbidden: []string{testingPkg},
	why: "nothing a program links imports package testing: test machinery lives in test files and in the " +
		"test-only helpers excepted here (programs share internal/kafkaverify with them)",
}, {
	pkgs:      []string{"..."},
	except:    []string{"internal/kafka", "internal/txn"},
	forbidden: []string{sarama},
	direct:    true,
	why: "one adapter per Kafka client: internal/kafka (consumer, producer, admin) and internal/txn " +
		"(the transactional producer) are the only code that sees sarama's types; the rest speaks weir's own",
}}

// clockCalls are the functions of package time that read the wall clock.
var clockCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTicker": true, "NewTimer": true,
}

// pkg is what go list says of one package.
type pkg struct {
	dir     string
	imports []string
}

// listPackages returns every package of the module and of its
// dependencies, by import path, with its production imports.
func listPackages(t *testing.T) map[string]pkg {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .Imports \" \"}}", module+"/...").Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	pkgs := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		require.Len(t, f, 3, "%q", line)
		pkgs[f[0]] = pkg{dir: f[1], imports: strings.Fields(f[2])}
	}
	return pkgs
}

// under reports whether path is p or one of its subpackages.
func under(path, p string) bool { return path == p || strings.HasPrefix(path, p+"/") }

// TestImports checks every policy: package → forbidden → why.
func TestImports(t *testing.T) {
	all := listPackages(t)
	for _, pol := range policies {
		for _, path := range expand(t, all, pol.pkgs, pol.except) {
			deps := all[path].imports
			if !pol.direct {
				deps = closure(all, path)
			}
			for _, dep := range deps {
				for _, bad := range pol.forbidden {
					if under(dep, bad) {
						t.Errorf("%s depends on %s: %s", path, dep, pol.why)
					}
				}
			}
		}
	}
}

// TestNoWallClock checks the packages that may not read the wall clock.
func TestNoWallClock(t *testing.T) {
	all := listPackages(t)
	for _, pol := range policies {
		if !pol.noClock {
			continue
		}
		for _, path := range expand(t, all, pol.pkgs, pol.except) {
			files, err := filepath.Glob(filepath.Join(all[path].dir, "*.go"))
			require.NoError(t, err)
			require.NotEmpty(t, files, path)
			for _, file := range files {
				if !strings.HasSuffix(file, "_test.go") {
					checkClock(t, file, pol.why)
				}
			}
		}
	}
}

// checkClock reports every call of a clockCalls function in file.
func checkClock(t *testing.T, file, why string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	timeName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && clockCalls[sel.Sel.Name] {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName {
				t.Errorf("%s: time.%s reads the wall clock: %s", fset.Position(sel.Pos()), sel.Sel.Name, why)
			}
		}
		return true
	})
}

// expand turns a policy's package list into import paths, failing on a
// package that does not exist (a policy must not rot silently).
func expand(t *testing.T, all map[string]pkg, pkgs, except []string) []string {
	var out []string
	for _, p := range pkgs {
		if p == "..." {
			for path := range all {
				rel := strings.TrimPrefix(path, module+"/")
				if under(path, module) && !under(path, module+"/examples") && !slices.Contains(except, rel) {
					out = append(out, path)
				}
			}
			continue
		}
		path := module + "/" + p
		_, ok := all[path]
		require.True(t, ok, "policy names %s, which does not exist", path)
		out = append(out, path)
	}
	for _, e := range except {
		_, ok := all[module+"/"+e]
		require.True(t, ok, "policy exempts %s, which does not exist", e)
	}
	slices.Sort(out)
	return out
}

// closure returns every package path depends on, directly or not.
func closure(all map[string]pkg, path string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		for _, dep := range all[p].imports {
			if !seen[dep] {
				seen[dep] = true
				visit(dep)
			}
		}
	}
	visit(path)
	out := make([]string, 0, len(seen))
	for dep := range seen {
		out = append(out, dep)
	}
	slices.Sort(out)
	return out
}

// exportedAPIExceptions are the exported declarations known to name an
// internal package's type, each with why it is still there. A fixed one must
// leave the list (the test fails on a stale entry).
var exportedAPIExceptions = map[string]string{}

// TestExportedAPI checks docs/design.md §11: the exported declarations of every public
// package name no type of an internal package nor of the Kafka client, so a
// program outside the module can call all it documents. Values (var and
// const initializers) may come from internal packages; their declared types
// may not.
func TestExportedAPI(t *testing.T) {
	all := listPackages(t)
	var public []string
	for path := range all {
		if under(path, module) && !strings.Contains(path+"/", "/internal/") &&
			!under(path, module+"/examples") && !under(path, module+"/cmd") {
			public = append(public, path)
		}
	}
	slices.Sort(public)
	seen := map[string]bool{}
	for _, path := range public {
		files, err := filepath.Glob(filepath.Join(all[path].dir, "*.go"))
		require.NoError(t, err)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			for _, name := range foreignAPI(t, file) {
				if _, ok := exportedAPIExceptions[name]; ok {
					seen[name] = true
					continue
				}
				t.Errorf("%s: the exported %s names a type of an internal package or of sarama: "+
					"no program outside the module can use it (docs/design.md §11)", file, name)
			}
		}
	}
	for name := range exportedAPIExceptions {
		if !seen[name] {
			t.Errorf("exportedAPIExceptions lists %s, which names no internal type any more: remove it", name)
		}
	}
}

// foreignAPI returns the exported declarations of file ("pkg.Name" or
// "pkg.Type.Method") whose signature, fields or type name a type of an
// internal package or of sarama.
func foreignAPI(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	foreign := map[string]bool{} // import names of forbidden packages
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !(under(p, sarama) || (under(p, module) && strings.Contains(p+"/", "/internal/"))) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		foreign[name] = true
	}
	if len(foreign) == 0 {
		return nil
	}
	names := func(n ast.Node) bool { // reports whether n names a foreign type
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && foreign[id.Name] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	pkg := f.Name.Name
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			if ast.IsExported(d.Name.Name) && names(d.Type) {
				out = append(out, pkg+"."+name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if ast.IsExported(s.Name.Name) && exportedParts(s.Type, names) {
						out = append(out, pkg+"."+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if ast.IsExported(id.Name) && s.Type != nil && names(s.Type) {
							out = append(out, pkg+"."+id.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// exportedParts reports whether the exported parts of a type definition —
// all of it, but for a struct's unexported fields and an interface's
// unexported methods — name a foreign type.
func exportedParts(typ ast.Expr, names func(ast.Node) bool) bool {
	var fields *ast.FieldList
	switch x := typ.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return names(typ)
	}
	for _, f := range fields.List {
		exported := len(f.Names) == 0 // embedded: promoted
		for _, n := range f.Names {
			exported = exported || ast.IsExported(n.Name)
		}
		if exported && names(f.Type) {
			return true
		}
	}
	return false
}

// receiverName returns the type name of a method receiver.
func receiverName(x ast.Expr) string {
	for {
		switch r := x.(type) {
		case *ast.StarExpr:
			x = r.X
		case *ast.IndexExpr:
			x = r.X
		case *ast.IndexListExpr:
			x = r.X
		case *ast.Ident:
			return r.Name
		default:
			return ""
		}
	}
}
