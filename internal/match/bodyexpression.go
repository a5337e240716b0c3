package match

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/utils/lru"
)

// A probe's bodyExpression reduces an answer to what the state records as
// its body (docs/behaviour.md, "What a probe records"): a Prometheus query's
// value without the evaluation timestamp that changes at every answer. It
// runs on the same engine as expected.expression: the same variables,
// cost limits and time budget; only its result may be any value.

// BodyRuntimeCostLimit is the largest actual cost of one evaluation of a
// body expression: a tenth of expected.expression's. A body expression is
// evaluated at every probe, not once per response, and CEL allocates
// about 20 bytes per unit of cost as it loops, so this bounds what one
// evaluation allocates to about 2 MiB; reading a value out of an answer
// (a Prometheus sample, a flag) costs tens of units.
const BodyRuntimeCostLimit = RuntimeCostLimit / 10

// MaxJSONValues is the most JSON values (objects, arrays, strings, numbers,
// booleans and nulls) a body expression's response.json may hold. A
// decoded value takes about a hundred bytes, so a 1 MiB array of small
// numbers would take 55 MiB; this bounds the decoded body to a few MiB. A
// larger body can still be read as response.body.
const MaxJSONValues = 1 << 14

// bodyPrograms caches compiled body expressions.
var bodyPrograms = &programCache{entries: lru.New(maxCachedPrograms), output: func(*types.Type) error { return nil }, costLimit: BodyRuntimeCostLimit}

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
// failed (a key missing from this answer) or ran past EvaluationBudget, its
// result has no JSON form, or it is longer than MaxResultBytes. It never
// holds the body.
//
// The body is decoded as JSON only when the expression reads
// response.json, and the decoded value is adapted as it is read, not
// copied: one evaluation holds the body, its decoded value once, and at
// most MaxResultBytes of result (docs/install.md sizes it).
func RecordedBody(expr string, got Response) (string, error) {
	entry := bodyPrograms.lookup(expr)
	if entry.err != nil {
		return "", fmt.Errorf("bodyExpression is invalid: %w", entry.err)
	}
	code, err := strconv.ParseInt(got.StatusCode, 10, 64)
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: statusCode %q is not a number", got.StatusCode)
	}
	var doc ref.Val = types.NullValue
	if entry.readsJSON {
		switch {
		case jsonValuesAtMost(got.Body, MaxJSONValues):
			doc = parseBody(got.Body).celValue()
		case json.Valid([]byte(got.Body)):
			return "", fmt.Errorf("bodyExpression failed: the body holds more than %d JSON values, the most response.json decodes", MaxJSONValues)
		}
		// Otherwise the body is not JSON (a CSV full of commas, say):
		// response.json is null, as for any body that is not JSON.
	}
	out, err := run(entry.prog, map[string]any{"response": map[string]any{
		"code": code,
		"body": got.Body,
		"json": doc,
	}})
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: %w", err)
	}
	text, err := resultText(out, MaxResultBytes)
	if err != nil {
		return "", fmt.Errorf("bodyExpression failed: %w", err)
	}
	return text, nil
}
