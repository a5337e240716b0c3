// Package match decides whether a state's response matches what a
// DynamicIngress expects (docs/behaviour.md). It has no Kubernetes types.
package match

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// BodyMatch is how an expected body is compared with the response's body.
type BodyMatch string

const (
	// BodyMatchExact means the same JSON value when both bodies are JSON, else
	// the same text once surrounding whitespace is trimmed. "" means Exact.
	BodyMatchExact BodyMatch = "Exact"
	// BodyMatchContains means the response's JSON contains the expected JSON
	// (extra object keys allowed, at any depth) when both are JSON, else the
	// response's text contains the expected text.
	BodyMatchContains BodyMatch = "Contains"
)

// Expected is what a DynamicIngress waits for. An empty StatusCode, a nil
// Body and an empty Expression are not compared; every other field must
// hold.
type Expected struct {
	StatusCode string
	Body       *string
	BodyMatch  BodyMatch
	// Expression is CEL over response.code, response.body and
	// response.json that must evaluate to true (see CompileExpression).
	Expression string
}

// Response is a state's response. An empty StatusCode means there is none.
type Response struct {
	StatusCode string
	Body       string
}

// Outcome of comparing a response with what is expected.
type Outcome int

const (
	// NoResponse means the state has no response, so nothing can match.
	NoResponse Outcome = iota
	// NotMatched means some expected field differs from the response.
	NotMatched
	// Matched means every expected field matches the response.
	Matched
	// Pending means the expression's verdict is not known yet
	// (EvaluateKnown): it is being evaluated elsewhere.
	Pending
)

// KnownVerdicts returns the verdict of an expression on a response when it
// is known ("" when the expression holds, else why not), or false when it
// is not known yet (EvaluateKnown).
type KnownVerdicts func(expr string, got Response) (string, bool)

// Result is an Outcome and, when NotMatched, why: a sentence for a
// condition message, the same for the same input so that a condition does
// not change on every reconcile. Detail is empty otherwise.
type Result struct {
	Outcome Outcome
	Detail  string
}

// Evaluate compares a response with what is expected. Fields are checked
// in order (statusCode, body, expression) and the first that fails is the
// Detail; later ones are not evaluated, which spares running an expression
// whose answer cannot change the outcome.
func Evaluate(want Expected, got Response) Result {
	return EvaluateKnown(want, got, nil)
}

// EvaluateKnown is Evaluate with the expression's verdict taken from known,
// which evaluates nothing: when known does not have it, the outcome is
// Pending. A nil known evaluates the expression here, as Evaluate does.
// The manager's switch workers use it so that they never wait for an
// evaluation (docs/behaviour.md, "Fair shares").
func EvaluateKnown(want Expected, got Response, known KnownVerdicts) Result {
	if got.StatusCode == "" {
		return Result{Outcome: NoResponse}
	}
	if d := checkStatus(want.StatusCode, got.StatusCode); d != "" {
		return notMatched(d)
	}
	// The body is parsed once, and only when something reads it: a shared
	// verdict of the expression needs no parse.
	var body *parsedBody
	parsed := func() parsedBody {
		if body == nil {
			b := parseBody(got.Body)
			body = &b
		}
		return *body
	}
	if want.Body != nil {
		if d := checkBody(*want.Body, want.BodyMatch, parsed()); d != "" {
			return notMatched(d)
		}
	}
	if want.Expression != "" {
		d := ""
		if known == nil {
			d = evaluateExpression(want.Expression, got, parsed)
		} else if v, ok := known(want.Expression, got); ok {
			d = v
		} else {
			return Result{Outcome: Pending}
		}
		if d != "" {
			return notMatched(d)
		}
	}
	return Result{Outcome: Matched}
}

// notMatched is a NotMatched result with its reason.
func notMatched(detail string) Result {
	return Result{Outcome: NotMatched, Detail: detail}
}

// checkStatus says why the status code differs, or "" when it matches or
// is not expected. Codes compare as strings: the API validates both.
func checkStatus(want, got string) string {
	if want == "" || want == got {
		return ""
	}
	return fmt.Sprintf("statusCode is %q, expected %q", got, want)
}

// checkBody says why the body does not match, or "" when it does.
func checkBody(want string, how BodyMatch, got parsedBody) string {
	switch how {
	case "", BodyMatchExact:
		if !bodyEquals(want, got) {
			return "body does not match"
		}
	case BodyMatchContains:
		return bodyContains(want, got)
	default:
		// The API enum keeps this out; failing beats guessing a meaning.
		return fmt.Sprintf("bodyMatch %q is not supported", string(how))
	}
	return ""
}

// parsedBody is a response body and, when it is JSON, its value, parsed
// once for the body check and the expression.
type parsedBody struct {
	text   string
	value  any
	isJSON bool
}

// parseBody parses a body as JSON where it can.
func parseBody(text string) parsedBody {
	v, ok := parseJSON(text)
	return parsedBody{text: text, value: v, isJSON: ok}
}

// celValue is response.json: the JSON value, adapted as it is read, or
// CEL null when the body is not JSON.
func (b parsedBody) celValue() ref.Val {
	if !b.isJSON {
		return types.NullValue
	}
	return jsonAdapter{}.NativeToValue(b.value)
}

// bodyEquals applies Exact to an expected body and a parsed one.
func bodyEquals(want string, got parsedBody) bool {
	if wantJSON, ok := parseJSON(want); ok && got.isJSON {
		return jsonMatch(wantJSON, got.value, false)
	}
	return strings.TrimSpace(want) == strings.TrimSpace(got.text)
}

// bodyContains applies Contains and says why it fails, or "". Whitespace
// around the expected text is ignored, as Exact ignores it, so a YAML block
// scalar's final newline does not have to be in the response.
func bodyContains(want string, got parsedBody) string {
	if wantJSON, ok := parseJSON(want); ok && got.isJSON {
		if !jsonMatch(wantJSON, got.value, true) {
			return "body does not contain the expected JSON"
		}
		return ""
	}
	if !strings.Contains(got.text, strings.TrimSpace(want)) {
		return "body does not contain the expected text"
	}
	return ""
}

// BodiesMatch reports whether two bodies are the same: the same JSON value
// when both parse as JSON (key order, whitespace and the spelling of
// numbers do not matter), else the same text once surrounding whitespace is
// trimmed. It is Evaluate's Exact body rule.
func BodiesMatch(want, got string) bool {
	return bodyEquals(want, parseBody(got))
}
