package match

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// costlyRegex makes matches() cost about 30 per tenth of a character:
// within the estimate for a body of maxBodySize bytes, over the run-time
// limit on a body of a few hundred thousand.
var costlyRegex = "^(" + strings.Repeat("a|", 58) + "a)*$"

func TestEvaluateExpression(t *testing.T) {
	tests := []struct {
		name       string
		expr       string
		code, body string
		detail     string // "" means Matched
	}{
		{"true", "true", "200", "", ""},
		{"false", "false", "200", "", "expression evaluated to false"},
		{"code is an int", "response.code == 200", "200", "", ""},
		{"code differs", "response.code == 200", "503", "", "expression evaluated to false"},
		{"code range", "response.code >= 200 && response.code < 300", "204", "", ""},
		{"int compares with double", "response.code < 299.5", "200", "", ""},
		{"code range fails", "response.code >= 200 && response.code < 300", "302", "", "expression evaluated to false"},
		{"body contains", `response.body.contains("maint")`, "503", "in maintenance", ""},
		{"body startsWith", `response.body.startsWith("OK")`, "200", "not OK", "expression evaluated to false"},
		{"body matches", `response.body.matches("^[a-z ]+$")`, "200", "in maintenance", ""},
		{"body size", `size(response.body) == 2`, "200", "ok", ""},
		{"json field", `response.json.status == "ok"`, "200", `{"status":"ok"}`, ""},
		{"json nested", `response.json.a.b[1].c == true`, "200", `{"a":{"b":[{},{"c":true}]}}`, ""},
		{"json int", `response.json.count == 3`, "200", `{"count":3}`, ""},
		{"json 3.0 equals 3", `response.json.count == 3`, "200", `{"count":3.0}`, ""},
		{"json double compares with int", `response.json.load > 2`, "200", `{"load":2.5}`, ""},
		{"json bool", `response.json.enabled == true`, "200", `{"enabled":true}`, ""},
		{"json bool false", `response.json.enabled`, "200", `{"enabled":false}`, "expression evaluated to false"},
		{"json integers are exact", `response.json.id == 9007199254740993`, "200", `{"id":9007199254740993}`, ""},
		{"json integers are not floats", `response.json.id == 9007199254740993`, "200", `{"id":9007199254740992}`, "expression evaluated to false"},
		{"json list", `response.json.items.exists(i, i.ok)`, "200", `{"items":[{"ok":false},{"ok":true}]}`, ""},
		{"has present", `has(response.json.enabled)`, "200", `{"enabled":false}`, ""},
		{"has absent", `has(response.json.enabled)`, "200", `{"x":1}`, "expression evaluated to false"},
		{"has guards a missing key", `has(response.json.enabled) && response.json.enabled`, "200", `{"x":1}`, "expression evaluated to false"},
		{"missing key is an error", `response.json.enabled == true`, "200", `{"x":1}`, "expression failed: no such key: enabled"},
		{"index out of range is an error", `response.json[0] == 1`, "200", `[]`, "expression failed: index out of bounds: 0"},
		{"text body has null json", `response.json == null`, "200", "plain text", ""},
		{"trailing garbage has null json", `response.json == null`, "200", `{"a":1} }`, ""},
		{"JSON null body", `response.json == null`, "200", `null`, ""},
		{"JSON body is not null", `response.json == null`, "200", `{}`, "expression evaluated to false"},
		{"has on null json", `has(response.json.a)`, "200", "plain text", "expression evaluated to false"},
		{"int result", `response.json.count`, "200", `{"count":3}`, "expression failed: result is int, not bool"},
		{"string result", `response.json`, "200", `"yes"`, "expression failed: result is string, not bool"},
		{"null result", `response.json`, "200", "text", "expression failed: result is null_type, not bool"},
		{"code not a number", `true`, "abc", "", `expression failed: statusCode "abc" is not a number`},
		{"no Response literals", `Response{code: 1}.code == 1`, "200", "", "expression failed: cannot create a Response"},
		{"undeclared reference", `foo == 1`, "200", "",
			"expression is invalid: compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n" +
				" | foo == 1\n" +
				" | ^"},
		{"run-time cost limit", fmt.Sprintf("response.body.matches(%q)", costlyRegex), "200", strings.Repeat("a", 400_000),
			"expression failed: operation cancelled: actual cost limit exceeded"},
		{"under the run-time cost limit", fmt.Sprintf("response.body.matches(%q)", costlyRegex), "200", strings.Repeat("a", 300_000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Result{Outcome: Matched}
			if tt.detail != "" {
				want = Result{NotMatched, tt.detail}
			}
			got := Evaluate(Expected{Expression: tt.expr}, Response{StatusCode: tt.code, Body: tt.body})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Evaluate(%q) on %.60q (-want +got):\n%s", tt.expr, tt.body, diff)
			}
		})
	}
}

func TestCompileExpression(t *testing.T) {
	tests := []struct {
		name, expr string
		err        string // the error's first line; "" means valid
	}{
		{"empty is unset", "", ""},
		{"bool", "response.code == 200", ""},
		{"dyn is checked when evaluated", "response.json.enabled", ""},
		{"has", "has(response.json.a)", ""},
		{"one loop over response.json", "response.json.items.exists(x, x.ok)", ""},
		{"costly regex within the estimate", fmt.Sprintf("response.body.matches(%q)", costlyRegex), ""},
		{"syntax error", "response.code ==",
			"compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting " +
				"{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"},
		{"undeclared reference", "foo == 1",
			"compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"},
		{"type error", `response.code == "200"`,
			"compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'"},
		{"unknown field", "response.status == 200",
			"compilation failed: ERROR: <input>:1:9: undefined field 'status'"},
		{"int result", "response.code", "must evaluate to a bool, but evaluates to int"},
		{"string result", "response.body", "must evaluate to a bool, but evaluates to string"},
		{"nested loops cost too much", "response.json.items.all(x, response.json.items.all(y, x == y))",
			"estimated cost 389124861660758019 exceeds the limit 10000000: the cost is estimated for a response body of up to 3145728 bytes; " +
				"simplify the expression, e.g. avoid nested loops over response.json"},
		{"building a list per element costs too much", "response.json.items.filter(x, x > 1).size() > 2",
			"estimated cost 23592975 exceeds the limit 10000000: the cost is estimated for a response body of up to 3145728 bytes; " +
				"simplify the expression, e.g. avoid nested loops over response.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := CompileExpression(tt.expr); err != nil {
				got, _, _ = strings.Cut(err.Error(), "\n")
				if got == "" {
					got = "(error with an empty first line)"
				}
			}
			if diff := cmp.Diff(tt.err, got); diff != "" {
				t.Errorf("CompileExpression(%q) (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func TestProgramCache(t *testing.T) {
	t.Run("same program for the same expression", func(t *testing.T) {
		c := newProgramCache(4)
		first, again := c.lookup("response.code == 200"), c.lookup("response.code == 200")
		if first != again || first.prog == nil {
			t.Errorf("lookup twice = %p, %p; want one compiled program", first, again)
		}
	})
	t.Run("errors are cached", func(t *testing.T) {
		c := newProgramCache(4)
		first, again := c.lookup("foo"), c.lookup("foo")
		if first != again || first.err == nil {
			t.Errorf("lookup twice = %p, %p; want one cached error", first, again)
		}
	})
	t.Run("bounded, least recently used goes", func(t *testing.T) {
		c := newProgramCache(2)
		a := c.lookup("true")
		c.lookup("false")
		c.lookup("true") // true is now the most recently used
		c.lookup("1 == 1")
		if got := c.entries.Len(); got != 2 {
			t.Errorf("Len() = %d, want 2", got)
		}
		if c.lookup("true") != a {
			t.Error("the recently used entry was evicted")
		}
		if n := c.entries.Len(); n != 2 {
			t.Errorf("Len() after refetching = %d, want 2", n)
		}
	})
	t.Run("Evaluate and CompileExpression share the cache", func(t *testing.T) {
		const expr = `response.body == "cached"`
		if err := CompileExpression(expr); err != nil {
			t.Fatal(err)
		}
		first := programs.lookup(expr)
		Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: "cached"})
		if programs.lookup(expr) != first {
			t.Error("Evaluate compiled the expression again")
		}
	})
}

// TestConcurrentEvaluate runs many workers over shared and distinct
// expressions, through a cache small enough to evict; -race checks it.
func TestConcurrentEvaluate(t *testing.T) {
	cache := newProgramCache(8)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := (w*200 + i) % 32
				expr := fmt.Sprintf("response.json.n == %d", n)
				body := fmt.Sprintf(`{"n":%d}`, n)
				if got := Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: body}); got.Outcome != Matched {
					errs <- fmt.Sprintf("Evaluate(%q) = %+v", expr, got)
					return
				}
				if entry := cache.lookup(expr); entry.err != nil {
					errs <- fmt.Sprintf("lookup(%q): %v", expr, entry.err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := cache.entries.Len(); n > 8 {
		t.Errorf("Len() = %d, want at most 8", n)
	}
}

// TestCostLimitsMatchKubernetes pins EstimatedCostLimit to the constant it
// mirrors. The package is read from the module's source rather than
// imported, since importing it needs some twenty more modules.
func TestCostLimitsMatchKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/apiextensions-apiserver").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(out)), "pkg", "apis", "apiextensions", "validation", "validation.go")
	got, err := intConst(file, "StaticEstimatedCostLimit")
	if err != nil {
		t.Fatal(err)
	}
	if got != EstimatedCostLimit {
		t.Errorf("StaticEstimatedCostLimit = %d, EstimatedCostLimit = %d", got, EstimatedCostLimit)
	}
}

// intConst reads an integer constant declared as a literal in a Go file.
func intConst(file, name string) (int64, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return 0, err
	}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if id.Name != name || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					return strconv.ParseInt(lit.Value, 0, 64)
				}
			}
		}
	}
	return 0, fmt.Errorf("%s: no constant %s", file, name)
}

// runawayBody is a fixed body of 64,001 bytes holding a JSON array of
// 32,000 zeros: a loop over it runs for seconds in cel-go, within the cost
// limit.
var runawayBody = "[" + strings.TrimSuffix(strings.Repeat("0,", 32_000), ",") + "]"

// TestExpressionTimeBudget: an expression that runs past the budget is
// stopped and is an evaluation error that says so; the same expression on
// a small body holds.
func TestExpressionTimeBudget(t *testing.T) {
	if len(runawayBody) != 64_001 {
		t.Fatalf("runaway body is %d bytes, want 64001", len(runawayBody))
	}
	for _, expr := range []string{`response.json.exists(x, x == 1)`, `response.json.all(x, x == 0)`} {
		got := Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: runawayBody})
		want := Result{NotMatched, "expression failed: evaluation exceeded its time budget of 100ms and was stopped"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s on 32,000 elements (-want +got):\n%s", expr, diff)
		}
	}
	got := Evaluate(Expected{Expression: `response.json.exists(x, x == 1)`}, Response{StatusCode: "200", Body: "[0,1]"})
	if diff := cmp.Diff(Result{Outcome: Matched}, got); diff != "" {
		t.Errorf("the same expression on a small body (-want +got):\n%s", diff)
	}
}

// TestExpressionEvaluatedOncePerResponse: a hundred DynamicIngresses asking
// at once for the same expression on the same response cost one
// evaluation, and asking again costs none; another response costs one more.
func TestExpressionEvaluatedOncePerResponse(t *testing.T) {
	const expr = `response.json.size() > 0 && response.json[0] == 7`
	before := Evaluations()
	var wg sync.WaitGroup
	results := make([]Result, 100)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: "[7, 1]"})
		}()
	}
	wg.Wait()
	for i, got := range results {
		if got.Outcome != Matched {
			t.Fatalf("evaluation %d: %+v, want Matched", i, got)
		}
	}
	if n := Evaluations() - before; n != 1 {
		t.Errorf("100 concurrent evaluations of one expression on one response ran it %d times, want 1", n)
	}
	Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: "[7, 1]"})
	got := Evaluate(Expected{Expression: expr}, Response{StatusCode: "200", Body: "[8, 1]"})
	if got.Outcome != NotMatched {
		t.Errorf("on another body: %+v, want NotMatched", got)
	}
	if n := Evaluations() - before; n != 2 {
		t.Errorf("after one more ask and one other response: %d evaluations, want 2", n)
	}
	// The same body with another status code is another response.
	Evaluate(Expected{Expression: expr}, Response{StatusCode: "503", Body: "[7, 1]"})
	if n := Evaluations() - before; n != 3 {
		t.Errorf("after another status code: %d evaluations, want 3", n)
	}
}
