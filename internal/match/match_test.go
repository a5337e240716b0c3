package match

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		want Expected
		got  Response
		out  Result
	}{
		{"no response never matches", Expected{StatusCode: "200"}, Response{}, Result{Outcome: NoResponse}},
		{"no response never matches a body either", Expected{Body: ptr("")}, Response{Body: ""}, Result{Outcome: NoResponse}},
		{"no response never matches an expression", Expected{Expression: "true"}, Response{Body: "x"}, Result{Outcome: NoResponse}},
		{"nothing expected matches any response", Expected{}, Response{StatusCode: "500"}, Result{Outcome: Matched}},
		{"status equal", Expected{StatusCode: "200"}, Response{StatusCode: "200", Body: "x"}, Result{Outcome: Matched}},
		{"status differs", Expected{StatusCode: "200"}, Response{StatusCode: "503"},
			Result{NotMatched, `statusCode is "503", expected "200"`}},
		{"status compared as strings", Expected{StatusCode: "200"}, Response{StatusCode: "200 "},
			Result{NotMatched, `statusCode is "200 ", expected "200"`}},
		{"body only, equal", Expected{Body: ptr("ok")}, Response{StatusCode: "500", Body: "ok"}, Result{Outcome: Matched}},
		{"body only, differs", Expected{Body: ptr("ok")}, Response{StatusCode: "200", Body: "nok"},
			Result{NotMatched, "body does not match"}},
		{"explicit Exact is the default", Expected{Body: ptr("ok"), BodyMatch: BodyMatchExact}, Response{StatusCode: "200", Body: "ok!"},
			Result{NotMatched, "body does not match"}},
		{"Exact does not accept a substring", Expected{Body: ptr("ok")}, Response{StatusCode: "200", Body: "ok!"},
			Result{NotMatched, "body does not match"}},
		{"unknown bodyMatch never matches", Expected{Body: ptr("ok"), BodyMatch: "Regex"}, Response{StatusCode: "200", Body: "ok"},
			Result{NotMatched, `bodyMatch "Regex" is not supported`}},
		{"both must match: body differs", Expected{StatusCode: "200", Body: ptr("a")}, Response{StatusCode: "200", Body: "b"},
			Result{NotMatched, "body does not match"}},
		{"both must match: status differs", Expected{StatusCode: "200", Body: ptr("a")}, Response{StatusCode: "201", Body: "a"},
			Result{NotMatched, `statusCode is "201", expected "200"`}},
		{"both match", Expected{StatusCode: "200", Body: ptr(`{"a":1}`)}, Response{StatusCode: "200", Body: `{ "a" : 1 }`}, Result{Outcome: Matched}},
		{"empty expected body matches empty body", Expected{Body: ptr("")}, Response{StatusCode: "204"}, Result{Outcome: Matched}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.out, Evaluate(tt.want, tt.got)); diff != "" {
				t.Errorf("Evaluate(%+v, %+v) (-want +got):\n%s", tt.want, tt.got, diff)
			}
		})
	}
}

func TestEvaluateAllFieldsMustHold(t *testing.T) {
	want := Expected{
		StatusCode: "503",
		Body:       ptr(`{"maintenance":true}`),
		BodyMatch:  BodyMatchContains,
		Expression: `response.json.by == "ops"`,
	}
	tests := []struct {
		name string
		got  Response
		out  Result
	}{
		{"all hold", Response{StatusCode: "503", Body: `{"maintenance":true,"by":"ops"}`}, Result{Outcome: Matched}},
		{"status fails", Response{StatusCode: "200", Body: `{"maintenance":true,"by":"ops"}`},
			Result{NotMatched, `statusCode is "200", expected "503"`}},
		{"body fails", Response{StatusCode: "503", Body: `{"maintenance":false,"by":"ops"}`},
			Result{NotMatched, "body does not contain the expected JSON"}},
		{"expression fails", Response{StatusCode: "503", Body: `{"maintenance":true,"by":"dev"}`},
			Result{NotMatched, "expression evaluated to false"}},
		{"the first failing field is reported", Response{StatusCode: "200", Body: `{"by":"dev"}`},
			Result{NotMatched, `statusCode is "200", expected "503"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.out, Evaluate(want, tt.got)); diff != "" {
				t.Errorf("Evaluate(%+v) (-want +got):\n%s", tt.got, diff)
			}
		})
	}
}

// TestBodiesMatch covers the Exact rule, which BodiesMatch is.
func TestBodiesMatch(t *testing.T) {
	tests := []struct {
		name      string
		want, got string
		match     bool
	}{
		{"same text", "ok", "ok", true},
		{"text trimmed", "  ok\n", "ok", true},
		{"text inner whitespace counts", "o k", "ok", false},
		{"text case counts", "OK", "ok", false},
		{"empty bodies", "", "", true},
		{"empty vs whitespace", "", "  \n", true},
		{"empty is not JSON null", "", "null", false},
		{"json key order", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{"json whitespace", "{\n  \"status\": \"ok\"\n}\n", `{"status":"ok"}`, true},
		{"json different value", `{"status":"ok"}`, `{"status":"down"}`, false},
		{"json extra key", `{"a":1}`, `{"a":1,"b":2}`, false},
		{"json missing key", `{"a":1,"b":2}`, `{"a":1}`, false},
		{"json nested objects", `{"a":{"b":{"c":[1,{"d":null}]}}}`, `{"a":{"b":{"c":[1,{"d":null}]}}}`, true},
		{"json nested extra key", `{"a":{"b":1}}`, `{"a":{"b":1,"c":2}}`, false},
		{"json nested arrays in order", `{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{"json arrays of different length", `[1,2]`, `[1,2,3]`, false},
		{"json string vs text", `"ok"`, `ok`, false},
		{"json scalar", `true`, ` true `, true},
		{"json number vs string", `1`, `"1"`, false},
		{"json bool vs string", `true`, `"true"`, false},
		{"json null vs object", `null`, `{}`, false},
		{"json array vs object", `[]`, `{}`, false},

		// Numbers compare by exact decimal value.
		{"2^53+1 is not 2^53", `9007199254740993`, `9007199254740992`, false},
		{"2^53+1 nested is not 2^53", `{"id":9007199254740993}`, `{"id":9007199254740992}`, false},
		{"2^53+1 is itself", `{"id":9007199254740993}`, `{"id":9007199254740993}`, true},
		{"1 is 1.0", `{"a":1}`, `{"a":1.0}`, true},
		{"1 is 1e0", `1`, `1e0`, true},
		{"1.0 is 1e0", `1.0`, `1E+0`, true},
		{"1 is 10e-1", `1`, `10e-1`, true},
		{"100 is 1e2", `100`, `1e2`, true},
		{"1.5 is 15e-1", `1.5`, `15e-1`, true},
		{"0 is -0.0", `0`, `-0.0`, true},
		{"0 is 0e10", `0`, `0e10`, true},
		{"1 is not -1", `1`, `-1`, false},
		{"1 is not 10", `1`, `10`, false},
		{"0.1 is not 0.01", `0.1`, `0.01`, false},
		{"big decimal differs in its last digit", `0.1000000000000000000000000001`, `0.1`, false},
		{"big decimal spelled two ways", `123456789012345678901234567890.5`, `1234567890123456789012345678905e-1`, true},
		{"huge exponent", `1e999999999`, `10e999999998`, true},
		{"huge exponents differ", `1e999999999`, `1e999999998`, false},
		{"exponent beyond int64", `1e99999999999999999999`, `10e99999999999999999998`, true},

		// Anything but whitespace after the first value makes a text not JSON.
		{"trailing brace is not JSON", `{"a":1}`, `{"a":1} }`, false},
		{"trailing bracket is not JSON", `[1]`, `[1]]`, false},
		{"trailing text is not JSON", `{"a":1}`, `{"a":1} trailing`, false},
		{"trailing garbage compares as text", `{"a":1} }`, ` {"a":1} }`, true},
		{"trailing whitespace is fine", `{"a":1}`, "{\"a\":1}\n\t ", true},
		{"two json values are not one", `{"a":1}{"a":1}`, `{"a":1}{"a":1}`, true},
		{"two json values vs one", `{"a":1}`, `{"a":1}{"a":1}`, false},
		{"invalid JSON compares as text", `{"a":1,}`, `{"a":1}`, false},
		{"invalid JSON equal as text", `{'a':1}`, `{'a':1}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BodiesMatch(tt.want, tt.got); got != tt.match {
				t.Errorf("BodiesMatch(%q, %q) = %v, want %v", tt.want, tt.got, got, tt.match)
			}
		})
	}
}

func TestBodyContains(t *testing.T) {
	const (
		noJSON = "body does not contain the expected JSON"
		noText = "body does not contain the expected text"
	)
	tests := []struct {
		name      string
		want, got string
		detail    string // "" means Matched
	}{
		{"one field of a status object", `{"maintenance":true}`, `{"maintenance":true,"since":"2024-01-01","by":"ops"}`, ""},
		{"field with another value", `{"maintenance":true}`, `{"maintenance":false,"since":"x"}`, noJSON},
		{"missing key", `{"maintenance":true}`, `{"since":"x"}`, noJSON},
		{"null needs the key", `{"a":null}`, `{"b":1}`, noJSON},
		{"null with the key", `{"a":null}`, `{"a":null,"b":1}`, ""},
		{"empty object is in any object", `{}`, `{"x":1}`, ""},
		{"nested object", `{"a":{"b":1}}`, `{"a":{"b":1,"c":2},"d":3}`, ""},
		{"nested object differs", `{"a":{"b":1}}`, `{"a":{"b":2,"c":2}}`, noJSON},
		{"nested object vs array", `{"a":{}}`, `{"a":[]}`, noJSON},
		{"arrays contain element by element", `{"items":[{"id":1},{"id":2}]}`, `{"items":[{"id":1,"x":0},{"id":2,"y":0}]}`, ""},
		{"array element lacks a key", `[{"id":1},{"id":2}]`, `[{"id":1},{"x":2}]`, noJSON},
		{"shorter observed array", `[1,2]`, `[1]`, noJSON},
		{"longer observed array", `[1]`, `[1,2]`, noJSON},
		{"arrays in order", `[1,2]`, `[2,1]`, noJSON},
		{"array vs object", `{"a":1}`, `[{"a":1}]`, noJSON},
		{"equal scalars", `"ok"`, ` "ok" `, ""},
		{"JSON strings are not substrings", `"ok"`, `"okay"`, noJSON},
		{"different bools", `true`, `false`, noJSON},
		{"numbers by value", `{"n":1}`, `{"n":1.0,"m":2}`, ""},
		{"numbers exactly", `{"id":9007199254740993}`, `{"id":9007199254740992,"x":1}`, noJSON},

		// Either side not JSON: substring of the text.
		{"JSON in a text", `{"a":1}`, `prefix {"a":1} suffix`, ""},
		{"JSON not in a text", `{"a":1}`, `{"a": 1} x`, noText},
		{"trailing garbage makes observed text", `{"a":1}`, `{"a":1,"b":2} }`, noText},
		{"text in JSON", `maintenance`, `{"status":"maintenance"}`, ""},
		{"substring", "down", "service is down for maintenance", ""},
		{"substring is case-sensitive", "DOWN", "service is down", noText},
		{"expected whitespace trimmed", "maintenance\n", "in maintenance now", ""},
		{"empty text is in any text", "", "anything", ""},
		{"empty text is in an empty body", "", "", ""},
		{"no substring in an empty body", "x", "", noText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Result{Outcome: Matched}
			if tt.detail != "" {
				want = Result{NotMatched, tt.detail}
			}
			got := Evaluate(Expected{Body: ptr(tt.want), BodyMatch: BodyMatchContains}, Response{StatusCode: "200", Body: tt.got})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Contains %q in %q (-want +got):\n%s", tt.want, tt.got, diff)
			}
		})
	}
}
