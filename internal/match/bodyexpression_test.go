package match

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// promAnswer is a Prometheus instant query's answer at evaluation time ts
// with one sample of value v, or no sample when v is "".
func promAnswer(ts float64, v string) string {
	if v == "" {
		return `{"status":"success","data":{"resultType":"vector","result":[]}}`
	}
	return fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%v,%q]}]}}`, ts, v)
}

const promValue = `size(response.json.data.result) == 0 ? "0" : response.json.data.result[0].value[1]`

func TestRecordedBody(t *testing.T) {
	tests := []struct {
		name, expr, code, body string
		want, wantErr          string
	}{
		{"a Prometheus value without its timestamp", promValue, "200", promAnswer(1732400000.123, "0.02"), "0.02", ""},
		{"the same value at another time reads the same", promValue, "200", promAnswer(1732400031.5, "0.02"), "0.02", ""},
		{"no sample reads 0 with the guard", promValue, "200", promAnswer(0, ""), "0", ""},
		{"no sample without the guard is an error", `response.json.data.result[0].value[1]`, "200", promAnswer(0, ""), "",
			"bodyExpression failed: index out of bounds: 0"},
		{"an error answer has no data", promValue, "422", `{"status":"error","errorType":"bad_data","error":"parse error"}`, "",
			"bodyExpression failed: no such key: data"},
		{"an int is its JSON text", `response.code`, "200", "", "200", ""},
		{"a bool", `response.json.enabled`, "200", `{"enabled":true,"at":"12:00"}`, "true", ""},
		{"null", `response.json.x`, "200", `{"x":null}`, "null", ""},
		{"an object, keys sorted", `response.json.flag`, "200", `{"flag":{"on":true,"by":"ops"},"at":1}`, `{"by":"ops","on":true}`, ""},
		{"a built list", `[response.code, response.json.v]`, "200", `{"v":1.5}`, `[200,1.5]`, ""},
		{"an empty list", `response.json.items`, "200", `{"items":[]}`, `[]`, ""},
		{"a big integer stays exact", `response.json.id`, "200", `{"id":9007199254740993}`, "9007199254740993", ""},
		{"a string of the body", `response.body.trim()`, "200", "", "", "bodyExpression is invalid: compilation failed: ERROR: <input>:1:19: undeclared reference to 'trim' (in container '')\n | response.body.trim()\n | ..................^"},
		{"a duration has no JSON form", `duration("1s")`, "200", "", "", "bodyExpression failed: the result is of type google.protobuf.Duration, which has no JSON form; convert it with string()"},
		{"bytes have no JSON form either", `b"abc"`, "200", "", "", "bodyExpression failed: the result is of type bytes, which has no JSON form; convert it with string()"},
		{"an answer of more JSON values than response.json decodes", `response.json.all(x, x == 0) ? "all" : "some"`, "200", runawayBody, "",
			"bodyExpression failed: the body holds more than 16384 JSON values, the most response.json decodes"},
		{"a text full of commas is no JSON: response.json is null", `response.json == null ? "text" : "json"`, "200", strings.Repeat("a,b:", 20000), "text", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RecordedBody(tt.expr, Response{StatusCode: tt.code, Body: tt.body})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("RecordedBody = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompileBodyExpression(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{promValue, ""},
		{"", ""},
		{`response.json.data.result[0].value[1]`, ""},
		{`response.code + "x"`, "compilation failed: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'\n | response.code + \"x\"\n | ..............^"},
		{`response.json.a.map(x, response.json.b.map(y, response.json.c.map(z, x)))`, "estimated cost beyond any bound"},
	} {
		err := CompileBodyExpression(tt.expr)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("CompileBodyExpression(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
