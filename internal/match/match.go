// Package match decides whether a state's response matches what a
// DynamicIngress expects (SPEC §3.1). It has no Kubernetes types.
package match

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Expected is what a DynamicIngress waits for. An empty StatusCode and a nil
// Body are not compared.
type Expected struct {
	StatusCode string
	Body       *string
}

// Response is a state's response. An empty StatusCode means there is none.
type Response struct {
	StatusCode string
	Body       string
}

// Outcome of comparing a response with what is expected.
type Outcome int

const (
	// NoResponse: the state has no response, so nothing can match.
	NoResponse Outcome = iota
	// NotMatched: some expected field differs from the response.
	NotMatched
	// Matched: every expected field matches the response.
	Matched
)

// Evaluate compares a response with what is expected.
func Evaluate(want Expected, got Response) Outcome {
	if got.StatusCode == "" {
		return NoResponse
	}
	if want.StatusCode != "" && want.StatusCode != got.StatusCode {
		return NotMatched
	}
	if want.Body != nil && !BodiesMatch(*want.Body, got.Body) {
		return NotMatched
	}
	return Matched
}

// BodiesMatch reports whether two bodies are the same: the same JSON value
// when both parse as JSON (key order and whitespace do not matter), else the
// same text once surrounding whitespace is trimmed.
func BodiesMatch(want, got string) bool {
	wantJSON, wantOK := parseJSON(want)
	gotJSON, gotOK := parseJSON(got)
	if wantOK && gotOK {
		return reflect.DeepEqual(wantJSON, gotJSON)
	}
	return strings.TrimSpace(want) == strings.TrimSpace(got)
}

// parseJSON decodes one JSON value that fills the whole text.
func parseJSON(text string) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	// Trailing data after the first value means the text is not one JSON value.
	if dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false
	}
	return v, true
}
