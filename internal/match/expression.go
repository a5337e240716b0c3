package match

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"golang.org/x/sync/singleflight"
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

	// EvaluationBudget bounds the time of one evaluation. The cost limit
	// bounds work, not time: cel-go's cost tracker takes time quadratic in
	// the iterations of a loop, so a loop over a JSON array of 32,000
	// elements runs for seconds within the cost limit. Past the budget the
	// evaluation is interrupted and is an evaluation error.
	EvaluationBudget = 100 * time.Millisecond

	// interruptCheckFrequency is how many loop iterations run between two
	// looks at the budget: an iteration costs microseconds, so an
	// interrupted evaluation stops within a millisecond of its budget.
	interruptCheckFrequency = 64

	// maxCachedVerdicts bounds the verdict cache: one entry per expression
	// and state response in use, a few hundred bytes each.
	maxCachedVerdicts = 4096
)

// errBudgetExceeded is the error of an evaluation stopped at its budget.
var errBudgetExceeded = fmt.Errorf("evaluation exceeded its time budget of %v and was stopped", EvaluationBudget)

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

// evaluateExpression returns why an expression does not hold for a
// response, or "" when it evaluates to true. The verdict is evaluated once
// per expression and response and then shared: every DynamicIngress that
// expects the same expression of the same state, and every reconcile of
// each, reads the same verdict (docs/behaviour.md, "Expressions").
func evaluateExpression(expr string, got Response, body func() parsedBody) string {
	return verdicts.get(expr, got, func() string { return runExpression(expr, got, body()) })
}

// CachedVerdict returns the shared verdict of expr on got when it has been
// evaluated and is still kept ("" when the expression holds).
func CachedVerdict(expr string, got Response) (string, bool) {
	return verdicts.cached(expr, got)
}

// EvaluateVerdict returns the verdict of expr on got, evaluating it when
// it is not kept, and keeps it for CachedVerdict.
func EvaluateVerdict(expr string, got Response) string {
	return evaluateExpression(expr, got, func() parsedBody { return parseBody(got.Body) })
}

// runExpression evaluates an expression against a response, within
// EvaluationBudget.
func runExpression(expr string, got Response, body parsedBody) string {
	prog, err := programs.get(expr)
	if err != nil {
		return "expression is invalid: " + err.Error()
	}
	code, err := strconv.ParseInt(got.StatusCode, 10, 64)
	if err != nil {
		return fmt.Sprintf("expression failed: statusCode %q is not a number", got.StatusCode)
	}
	out, err := run(prog, map[string]any{"response": map[string]any{
		"code": code,
		"body": got.Body,
		"json": body.celValue(),
	}})
	if err != nil {
		return "expression failed: " + err.Error()
	}
	return boolResult(out)
}

// evaluations counts the programs run, for Evaluations.
var evaluations atomic.Uint64

// Evaluations is how many times an expression has been evaluated in this
// process: a verdict shared by many DynamicIngresses counts once.
func Evaluations() uint64 {
	return evaluations.Load()
}

// maxErrorBytes bounds the text of an evaluation error. CEL quotes what it
// could not find ("no such key: <key>"), and a key may be computed from the
// body: unbounded, it would fill the verdict cache and a condition message,
// which the API server refuses past 32 KiB.
const maxErrorBytes = 256

// run evaluates prog within EvaluationBudget.
func run(prog cel.Program, vars map[string]any) (ref.Val, error) {
	evaluations.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), EvaluationBudget)
	defer cancel()
	out, _, err := prog.ContextEval(ctx, vars)
	if err != nil && ctx.Err() != nil {
		return nil, errBudgetExceeded
	}
	if err != nil {
		return out, boundedError(err)
	}
	return out, nil
}

// boundedError is err with its text cut to maxErrorBytes on a character
// boundary, marked as cut.
func boundedError(err error) error {
	msg := err.Error()
	if len(msg) <= maxErrorBytes {
		return err
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return errors.New(strings.ToValidUTF8(msg[:cut], "") + "… (cut)")
}

// verdicts holds the verdict of each expression on each response.
var verdicts = newVerdictCache(maxCachedVerdicts)

// verdictCache maps an expression and a response to its verdict, keeping
// the most recently used, and evaluates each missing one once however many
// reconciles ask for it at the same moment. Safe for concurrent use.
type verdictCache struct {
	entries  *lru.Cache
	inFlight singleflight.Group
}

func newVerdictCache(size int) *verdictCache {
	return &verdictCache{entries: lru.New(size)}
}

// VerdictKey names the verdict of expr on got: it holds a digest of the
// body, not the body, which can be 64 KiB.
func VerdictKey(expr string, got Response) string {
	digest := sha256.Sum256([]byte(got.Body))
	return expr + "\x00" + got.StatusCode + "\x00" + string(digest[:])
}

// cached returns the verdict of expr on got when it is kept.
func (c *verdictCache) cached(expr string, got Response) (string, bool) {
	v, ok := c.entries.Get(VerdictKey(expr, got))
	if !ok {
		return "", false
	}
	return v.(string), true
}

// get returns the verdict of expr on got, calling evaluate when there is
// none yet.
func (c *verdictCache) get(expr string, got Response, evaluate func() string) string {
	key := VerdictKey(expr, got)
	if v, ok := c.entries.Get(key); ok {
		return v.(string)
	}
	v, _, _ := c.inFlight.Do(key, func() (any, error) {
		if v, ok := c.entries.Get(key); ok {
			return v, nil
		}
		verdict := evaluate()
		c.entries.Add(key, verdict)
		return verdict, nil
	})
	return v.(string)
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
	// readsJSON is false when the expression never reads response.json,
	// so that the body need not be decoded for it.
	readsJSON bool
}

// programCache maps expressions to compiled programs, keeping the most
// recently used. Safe for concurrent use.
type programCache struct {
	entries *lru.Cache
	// output says why a result type is refused, nil when it is fine.
	output func(*types.Type) error
	// costLimit is the largest actual cost of one evaluation.
	costLimit uint64
}

// newProgramCache returns an empty cache of at most size entries for
// expressions that yield a bool.
func newProgramCache(size int) *programCache {
	return &programCache{entries: lru.New(size), output: mustBeBool, costLimit: RuntimeCostLimit}
}

// mustBeBool refuses a result type that cannot be a bool.
func mustBeBool(t *types.Type) error {
	if !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return fmt.Errorf("must evaluate to a bool, but evaluates to %s", t)
	}
	return nil
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
	prog, checked, err := compile(expr, c.output, c.costLimit)
	entry := &compiled{prog: prog, err: err}
	if err == nil {
		entry.readsJSON = readsJSON(checked.NativeRep())
	}
	c.entries.Add(expr, entry)
	return entry
}

// compile builds a cost-limited program for expr whose result type output
// accepts, with its checked form, or says why it cannot.
func compile(expr string, output func(*types.Type) error, costLimit uint64) (cel.Program, *cel.Ast, error) {
	env, err := celEnv()
	if err != nil {
		return nil, nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, fmt.Errorf("compilation failed: %w", iss.Err())
	}
	if err := output(ast.OutputType()); err != nil {
		return nil, nil, err
	}
	if err := checkCost(env, ast); err != nil {
		return nil, nil, err
	}
	// The limit bounds work, not time; run bounds the time, looking at its
	// budget every interruptCheckFrequency loop iterations.
	prog, err := env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(interruptCheckFrequency))
	return prog, ast, err
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
