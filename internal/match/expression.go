package match

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/lru"
)

// Cost limits, the ones the Kubernetes API server applies to a CRD's
// x-kubernetes-validations rules, so an expression is held to the same
// bounds as any rule a cluster admin already accepts.
const (
	// EstimatedCostLimit is the largest estimated cost CompileExpression
	// accepts. It equals StaticEstimatedCostLimit in
	// k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation (a
	// test checks it); that package is not imported here because it drags
	// the API server's webhook, audit and gRPC packages into the manager.
	EstimatedCostLimit = 10_000_000

	// RuntimeCostLimit is the largest actual cost of one evaluation: the
	// API server's per-call limit for a validation rule.
	RuntimeCostLimit = celconfig.PerCallLimit

	// maxBodySize bounds the length of response.body, and so the size of
	// anything taken from response.json, for the cost estimate. The body is
	// stored in a Kubernetes object, which cannot exceed the API server's
	// request size limit; the API server bounds its own unbounded strings
	// the same way.
	maxBodySize = uint64(celconfig.MaxRequestSizeBytes)

	// maxCachedPrograms bounds the program cache's memory; a cluster rarely
	// has more distinct expressions than this, so they all stay compiled.
	maxCachedPrograms = 2048
)

// responseTypeName is the CEL type of the response variable.
const responseTypeName = "Response"

// responseFields are the fields of response, typed so that the checker
// rejects `response.code == "200"` instead of letting it be false.
var responseFields = map[string]*types.Type{
	"code": types.IntType,
	"body": types.StringType,
	"json": types.DynType,
}

// CompileExpression checks an expression as the admission webhook does:
// it must parse, type-check against the response variable, yield a bool
// (or dyn, checked when evaluated), and have an estimated cost within
// EstimatedCostLimit. An empty expression is unset, and valid.
func CompileExpression(expr string) error {
	if expr == "" {
		return nil
	}
	_, err := programs.get(expr)
	return err
}

// evaluateExpression runs an expression against a response and returns
// why it does not hold, or "" when it evaluates to true.
func evaluateExpression(expr string, got Response, body parsedBody) string {
	prog, err := programs.get(expr)
	if err != nil {
		return "expression is invalid: " + err.Error()
	}
	code, err := strconv.ParseInt(got.StatusCode, 10, 64)
	if err != nil {
		return fmt.Sprintf("expression failed: statusCode %q is not a number", got.StatusCode)
	}
	out, _, err := prog.Eval(map[string]any{"response": map[string]any{
		"code": code,
		"body": got.Body,
		"json": body.celValue(),
	}})
	if err != nil {
		return "expression failed: " + err.Error()
	}
	return boolResult(out)
}

// boolResult turns an evaluation result into a mismatch detail.
func boolResult(out ref.Val) string {
	b, ok := out.(types.Bool)
	switch {
	case !ok:
		return fmt.Sprintf("expression failed: result is %s, not bool", out.Type().TypeName())
	case b == types.False:
		return "expression evaluated to false"
	default:
		return ""
	}
}

// programs caches compiled expressions for every reconcile worker.
var programs = newProgramCache(maxCachedPrograms)

// compiled is the outcome of compiling one expression: a program, or the
// error that says why there is none. Errors are cached too, so an invalid
// expression stored before the webhook existed is not recompiled on every
// reconcile.
type compiled struct {
	prog cel.Program
	err  error
}

// programCache maps expressions to compiled programs, keeping the most
// recently used. Safe for concurrent use.
type programCache struct {
	entries *lru.Cache
}

// newProgramCache returns an empty cache of at most size entries.
func newProgramCache(size int) *programCache {
	return &programCache{entries: lru.New(size)}
}

// get returns the program for expr, compiling it on first use. Two workers
// may compile the same new expression at once; both get a working program
// and the later one stays, which is cheaper than serialising compilations.
func (c *programCache) get(expr string) (cel.Program, error) {
	entry := c.lookup(expr)
	return entry.prog, entry.err
}

// lookup returns the cached entry for expr, compiling and adding it first
// when it is missing.
func (c *programCache) lookup(expr string) *compiled {
	if v, ok := c.entries.Get(expr); ok {
		return v.(*compiled)
	}
	prog, err := compile(expr)
	entry := &compiled{prog: prog, err: err}
	c.entries.Add(expr, entry)
	return entry
}

// compile builds a cost-limited program for expr or says why it cannot.
func compile(expr string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %w", iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("must evaluate to a bool, but evaluates to %s", t)
	}
	if err := checkCost(env, ast); err != nil {
		return nil, err
	}
	// The limit bounds work, not time: cel-go's cost tracker (v0.30 to
	// v0.32) takes time quadratic in loop iterations, so a loop over a
	// JSON array of 40,000 elements takes seconds before reaching it.
	return env.Program(ast, cel.CostLimit(RuntimeCostLimit))
}

// checkCost rejects an expression whose worst case, on the largest
// possible response, exceeds EstimatedCostLimit.
func checkCost(env *cel.Env, ast *cel.Ast) error {
	est, err := env.EstimateCost(ast, responseSizes{})
	if err != nil {
		return fmt.Errorf("cost estimation failed: %w", err)
	}
	if est.Max > EstimatedCostLimit {
		cost := strconv.FormatUint(est.Max, 10)
		if est.Max == math.MaxUint64 {
			// The estimate saturated: say so rather than print 2^64-1.
			cost = "beyond any bound"
		}
		return fmt.Errorf("estimated cost %s exceeds the limit %d: the cost is estimated for a response body of up to %d bytes; "+
			"simplify the expression, e.g. avoid nested loops over response.json",
			cost, uint64(EstimatedCostLimit), maxBodySize)
	}
	return nil
}

// celEnv is the one environment every expression compiles in, built on
// first use.
var celEnv = sync.OnceValues(newEnv)

// newEnv declares the response variable over CEL's standard library, with
// numbers comparable across int and double because response.json holds
// both (1 and 1.5 in one array must compare with `< 2`).
func newEnv() (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return cel.NewEnv(
		cel.CustomTypeProvider(responseProvider{Provider: reg}),
		cel.Variable("response", cel.ObjectType(responseTypeName)),
		cel.CrossTypeNumericComparisons(true),
	)
}

// responseProvider adds the Response object type to CEL's own types. Its
// fields have no accessors, so at run time the response is a plain map and
// field selection is a key lookup; the type only serves the checker.
type responseProvider struct {
	types.Provider
}

// FindStructType returns the Response type, or defers to CEL's types.
func (p responseProvider) FindStructType(name string) (*types.Type, bool) {
	if name == responseTypeName {
		return types.NewTypeTypeWithParam(types.NewObjectType(responseTypeName)), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames lists Response's fields, or defers to CEL's types.
func (p responseProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name == responseTypeName {
		return []string{"body", "code", "json"}, true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType types Response's fields, or defers to CEL's types.
func (p responseProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name == responseTypeName {
		t, ok := responseFields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return p.Provider.FindStructFieldType(name, field)
}

// NewValue refuses to build a Response inside an expression: there is no
// use for one, and the run-time representation is a map, not a struct.
func (p responseProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if name == responseTypeName {
		return types.WrapErr(errors.New("cannot create a Response"))
	}
	return p.Provider.NewValue(name, fields)
}

// responseSizes tells the cost estimator how large response data can be:
// without it every string and list from the response counts as unbounded
// and any loop over response.json would be rejected.
type responseSizes struct{}

// EstimateSize bounds the strings, lists and maps reached from response,
// all of which come out of a body of at most maxBodySize bytes.
// response.body has at most that many characters. In response.json the
// checker sees only dyn, not whether a value is a list, a map or a string,
// so one bound must do: a JSON array of n elements takes at least 2n+1
// bytes and an object of n entries more, so half the body bounds every
// collection, which is what loops cost. A string there can be nearly twice
// that long, but string functions cost a tenth per character, so the
// estimate stays close, and evaluation is capped by RuntimeCostLimit anyway.
func (responseSizes) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	switch {
	case len(path) == 2 && path[0] == "response" && path[1] == "body":
		return &checker.SizeEstimate{Min: 0, Max: maxBodySize}
	case len(path) >= 2 && path[0] == "response" && path[1] == "json":
		return &checker.SizeEstimate{Min: 0, Max: maxBodySize / 2}
	default:
		return nil
	}
}

// EstimateCallCost leaves every function at CEL's own estimate.
func (responseSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
