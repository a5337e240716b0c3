package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/utils/lru"
)

// A probe's bodyExpression reduces an answer to what the state records as
// its body (docs/behaviour.md, "What a probe records"): a Prometheus query's
// value without the evaluation timestamp that changes at every answer. It
// runs on the same engine as expected.expression: the same variables,
// cost limits and time budget; only its result may be any value.

// bodyPrograms caches compiled body expressions.
var bodyPrograms = &programCache{entries: lru.New(maxCachedPrograms), output: func(*types.Type) error { return nil }}

// CompileBodyExpression checks a body expression as the admission webhook
// does: it must parse, type-check against the response variable and have
// an estimated cost within EstimatedCostLimit. Its result may be of any
// type. An empty expression is unset, and valid.
func CompileBodyExpression(expr string) error {
	if expr == "" {
		return nil
	}
	_, err := bodyPrograms.get(expr)
	return err
}

// RecordedBody evaluates a body expression on a response and returns what
// is recorded as the body: a string result as it is, any other value as its
// JSON text (object keys sorted, so the same value reads the same). The
// error says why there is none: the expression is invalid, its evaluation
// failed (a key missing from this answer) or ran past EvaluationBudget, or
// its result has no JSON form. It never holds the body.
func RecordedBody(expr string, got Response) (string, error) {
	prog, err := bodyPrograms.get(expr)
	if err != nil {
		return "", fmt.Errorf("bodyExpression is invalid: %w", err)
	}
	code, err := strconv.ParseInt(got.StatusCode, 10, 64)
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: statusCode %q is not a number", got.StatusCode)
	}
	out, err := run(prog, map[string]any{"response": map[string]any{
		"code": code,
		"body": got.Body,
		"json": parseBody(got.Body).celValue(),
	}})
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: %w", err)
	}
	if s, ok := out.(types.String); ok {
		return string(s), nil
	}
	v, err := plainValue(out)
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: %w", err)
	}
	text, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: the result has no JSON form: %w", err)
	}
	return string(text), nil
}

// plainValue turns a CEL value into the Go value encoding/json writes as
// the same JSON.
func plainValue(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.String:
		return string(v), nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		return uint64(v), nil
	case types.Double:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("the result %v has no JSON form", float64(v))
		}
		return float64(v), nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		out := map[string]any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			key, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("the result is a map with a %s key; only string keys have a JSON form", k.Type().TypeName())
			}
			e, err := plainValue(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(key)] = e
		}
		return out, nil
	case traits.Lister:
		var out []any
		for it := v.Iterator(); it.HasNext() == types.True; {
			e, err := plainValue(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case *types.Err:
		return nil, errors.New(v.String())
	default:
		return nil, fmt.Errorf("the result is of type %s, which has no JSON form; convert it with string()", v.Type().TypeName())
	}
}
