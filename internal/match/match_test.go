package match

import "testing"

func ptr(s string) *string { return &s }

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		want Expected
		got  Response
		out  Outcome
	}{
		{"no response never matches", Expected{StatusCode: "200"}, Response{}, NoResponse},
		{"no response never matches a body either", Expected{Body: ptr("")}, Response{Body: ""}, NoResponse},
		{"status equal", Expected{StatusCode: "200"}, Response{StatusCode: "200", Body: "x"}, Matched},
		{"status differs", Expected{StatusCode: "200"}, Response{StatusCode: "503"}, NotMatched},
		{"status compared as strings", Expected{StatusCode: "200"}, Response{StatusCode: "200 "}, NotMatched},
		{"body only, equal", Expected{Body: ptr("ok")}, Response{StatusCode: "500", Body: "ok"}, Matched},
		{"body only, differs", Expected{Body: ptr("ok")}, Response{StatusCode: "200", Body: "nok"}, NotMatched},
		{"both must match: body differs", Expected{StatusCode: "200", Body: ptr("a")}, Response{StatusCode: "200", Body: "b"}, NotMatched},
		{"both must match: status differs", Expected{StatusCode: "200", Body: ptr("a")}, Response{StatusCode: "201", Body: "a"}, NotMatched},
		{"both match", Expected{StatusCode: "200", Body: ptr(`{"a":1}`)}, Response{StatusCode: "200", Body: `{ "a" : 1 }`}, Matched},
		{"empty expected body matches empty body", Expected{Body: ptr("")}, Response{StatusCode: "204"}, Matched},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Evaluate(tt.want, tt.got); got != tt.out {
				t.Errorf("Evaluate(%+v, %+v) = %v, want %v", tt.want, tt.got, got, tt.out)
			}
		})
	}
}

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
		{"json key order", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{"json whitespace", "{\n  \"status\": \"ok\"\n}\n", `{"status":"ok"}`, true},
		{"json different value", `{"status":"ok"}`, `{"status":"down"}`, false},
		{"json extra key", `{"a":1}`, `{"a":1,"b":2}`, false},
		{"json numbers by value", `{"a":1}`, `{"a":1.0}`, true},
		{"json nested arrays in order", `{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{"json string vs text", `"ok"`, `ok`, false},
		{"json scalar", `true`, ` true `, true},
		{"json vs non-json compares text", `{"a":1}`, `{"a":1} trailing`, false},
		{"two json values are not one", `{"a":1}{"a":1}`, `{"a":1}{"a":1}`, true},
		{"two json values vs one", `{"a":1}`, `{"a":1}{"a":1}`, false},
		{"empty vs whitespace", "", "  \n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BodiesMatch(tt.want, tt.got); got != tt.match {
				t.Errorf("BodiesMatch(%q, %q) = %v, want %v", tt.want, tt.got, got, tt.match)
			}
		})
	}
}
