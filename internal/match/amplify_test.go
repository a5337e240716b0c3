package match

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// allocated is how many bytes f allocated.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAmplifyingExpressionsStayBounded evaluates the expressions that
// turned a 10 KiB body into 10 MB of JSON (and a 1 MiB one into gigabytes)
// and every deeper nest the webhook admits, on 1 MiB answers: each stops
// with an error that says why, having allocated a few MiB at most.
func TestAmplifyingExpressionsStayBounded(t *testing.T) {
	// An amplifying expression stops within 8 MiB; a 1 MiB JSON string
	// decoded and written back whole takes its size a few times over.
	const limit, wholeLimit = 8 << 20, 16 << 20
	text := strings.Repeat("x", MaxResultBytes-16)
	numbers := "[" + strings.Repeat("0,", MaxResultBytes/2-2) + "0]"
	oneString := `{"a":"` + strings.Repeat("x", MaxResultBytes-16) + `"}`
	small := strings.Repeat("x", 10<<10)
	// As many empty objects as response.json decodes, padded to 1 MiB:
	// each costs CEL an allocation to read and only three bytes to write.
	emptyObjects := "[" + strings.Repeat("{},", (MaxJSONValues-1)/2-1) + "{}]"
	emptyObjects += strings.Repeat(" ", MaxResultBytes-1-len(emptyObjects))
	// As many short strings, and as many keys, as response.json decodes:
	// each loop step over them allocates in CEL.
	shortStrings := "[" + strings.Repeat(`"a",`, MaxJSONValues-3) + `"a"]`
	shortStrings += strings.Repeat(" ", MaxResultBytes-1-len(shortStrings))
	var keys strings.Builder
	keys.WriteString("{")
	for i := range MaxJSONValues/2 - 1 {
		if i > 0 {
			keys.WriteString(",")
		}
		fmt.Fprintf(&keys, `"%d":0`, i)
	}
	keys.WriteString("}")
	const (
		tooLarge   = "bodyExpression failed: the result is too large: it is longer than 1048576 bytes or holds more than 16384 values"
		tooCostly  = "bodyExpression failed: operation cancelled: actual cost limit exceeded"
		tooMany    = "bodyExpression failed: the body holds more than 16384 JSON values, the most response.json decodes"
		anyOutcome = "(any outcome)"
		// noneOrLate: no error, or, on a loaded machine, stopped at the
		// time budget; what the case checks is its allocation.
		noneOrLate = "(no error, or the time budget)"
		late       = "bodyExpression failed: evaluation exceeded its time budget of 100ms and was stopped"
	)
	tests := []struct {
		name, expr, body, wantErr string
		whole                     bool
	}{
		{"the 3-level nest of the report, 10 KiB body", builders.NestedMaps(3, "response.body"), small, tooLarge, false},
		{"the 3-level nest, 1 MiB body", builders.NestedMaps(3, "response.body"), text, tooLarge, false},
		{"the 4-level nest", builders.NestedMaps(4, "response.body"), text, tooCostly, false},
		{"the 5-level nest, the deepest admitted", builders.NestedMaps(5, "response.body"), text, tooCostly, false},
		{"a nest over response.json of a 1 MiB string", builders.NestedMaps(3, "response.json"), oneString, tooLarge, false},
		{"a nest over response.json of many numbers", builders.NestedMaps(2, "response.json"), numbers, tooMany, false},
		{"response.json of many numbers", "response.json", numbers, tooMany, false},
		{"a nest over 8191 empty objects", builders.NestedMaps(3, "response.json"), emptyObjects, tooLarge, false},
		{"8191 empty objects read whole", "response.json", emptyObjects, "", false},
		// Its time, past the budget or just under it, depends on the machine.
		{"a loop over 16 382 short strings", `response.json.exists(x, x == "b") ? "b" : "none"`, shortStrings, anyOutcome, false},
		{"the size of 16 382 short strings", `size(response.json)`, shortStrings, "", false},
		{"a loop over 8191 keys", `response.json.exists(k, k == "b") ? "b" : "none"`, keys.String(), noneOrLate, false},
		{"the 5-level nest of a literal", builders.NestedMaps(5, "1"), text, tooCostly, false},
		{"concatenated bodies", "response.body + response.body + response.body + response.body", text, tooCostly, false},
		{"a 1 MiB string read whole", "response.json", oneString, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CompileBodyExpression(tt.expr); err != nil {
				t.Fatalf("the webhook refuses %q: %v", tt.expr, err)
			}
			var err error
			alloc := allocated(func() { _, err = RecordedBody(tt.expr, Response{StatusCode: "200", Body: tt.body}) })
			got := ""
			if err != nil {
				got = err.Error()
			}
			lateOK := tt.wantErr == noneOrLate && (got == "" || got == late)
			if got != tt.wantErr && tt.wantErr != anyOutcome && !lateOK {
				t.Errorf("error = %q, want %q", got, tt.wantErr)
			}
			bound := uint64(limit)
			if tt.whole {
				bound = wholeLimit
			}
			if alloc > bound && !raceEnabled {
				t.Errorf("allocated %.1f MiB, want at most %d MiB", float64(alloc)/(1<<20), bound>>20)
			}
			t.Logf("%d chars over %d bytes: allocated %.1f MiB", len(tt.expr), len(tt.body), float64(alloc)/(1<<20))
		})
	}
}

// TestTheSixLevelNestIsRefused: one level deeper than the deepest admitted
// nest, the webhook's estimate refuses it.
func TestTheSixLevelNestIsRefused(t *testing.T) {
	err := CompileBodyExpression(builders.NestedMaps(6, "response.body"))
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit 10000000") {
		t.Fatalf("CompileBodyExpression = %v, want the estimated cost refused", err)
	}
}

func TestResultTextBudget(t *testing.T) {
	tests := []struct {
		name, expr string
		limit      int
		want       string
		wantErr    bool
	}{
		{"a list that fits", `[1, "a", {"b": null}]`, 20, `[1,"a",{"b":null}]`, false},
		{"one byte short", `[1, "a", {"b": null}]`, 17, "", true},
		{"keys sorted, HTML escaped", `{"z": "<&>", "a": 1.5}`, 100, `{"a":1.5,"z":"\u003c\u0026\u003e"}`, false},
		{"a string result as it is", `"<&>"`, 3, "<&>", false},
		{"a string result over the budget", `"abcd"`, 3, "", true},
		{"a long list refused before it is read", `[0,1,2,3,4,5,6,7,8,9]`, 10, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := bodyPrograms.get(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			out, err := run(prog, map[string]any{"response": map[string]any{"code": int64(200), "body": "", "json": nil}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := resultText(out, tt.limit)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("resultText = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && err != errResultTooLarge {
				t.Errorf("error = %v, want %v", err, errResultTooLarge)
			}
		})
	}
}

// TestResultValueBudget: a list of MaxResultValues nulls is 80 KiB of
// text, well within the byte budget, and one value more than the values
// budget, which counts the list itself.
func TestResultValueBudget(t *testing.T) {
	nulls := types.DefaultTypeAdapter.NativeToValue(make([]any, MaxResultValues))
	if _, err := resultText(nulls, MaxResultBytes); err != errResultTooLarge {
		t.Errorf("%d nulls: error %v, want %v", MaxResultValues, err, errResultTooLarge)
	}
	fewer := types.DefaultTypeAdapter.NativeToValue(make([]any, MaxResultValues-1))
	if got, err := resultText(fewer, MaxResultBytes); err != nil || len(got) != 5*(MaxResultValues-1)+1 {
		t.Errorf("%d nulls: %d bytes, %v; want all of them", MaxResultValues-1, len(got), err)
	}
}

func TestReadsJSON(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want bool
	}{
		{"response.body", false},
		{"response.code == 200 ? response.body : 'x'", false},
		{"response.json.a", true},
		{"has(response.json.a)", true},
		{"[response]", true},
		{promValue, true},
		{builders.NestedMaps(3, "response.body"), false},
	} {
		entry := bodyPrograms.lookup(tt.expr)
		if entry.err != nil {
			t.Fatalf("%q: %v", tt.expr, entry.err)
		}
		if entry.readsJSON != tt.want {
			t.Errorf("readsJSON(%q) = %v, want %v", tt.expr, entry.readsJSON, tt.want)
		}
	}
}

func TestJSONValuesAtMost(t *testing.T) {
	for _, tt := range []struct {
		text string
		n    int
		want bool
	}{
		{`1`, 1, true},
		{`[1,2]`, 2, false}, // the array and two numbers
		{`[1,2]`, 3, true},
		{`{"a":1,"b":[2]}`, 6, true}, // keys count too: never low
		{`{"a":1,"b":[2]}`, 5, false},
		{`"a,b:[{"`, 1, true},     // punctuation inside a string is not counted
		{`["a\",b", 1]`, 3, true}, // nor after an escaped quote
		{`["a\\",1,2]`, 3, false}, // an escaped backslash ends the escape
	} {
		if got := jsonValuesAtMost(tt.text, tt.n); got != tt.want {
			t.Errorf("jsonValuesAtMost(%s, %d) = %v, want %v", tt.text, tt.n, got, tt.want)
		}
	}
}

// TestEvaluationErrorsAreBounded: CEL quotes a missing key whole, and a
// key can be computed from the body; the error, the verdict cached for it
// and the message a condition shows stay a few hundred bytes.
func TestEvaluationErrorsAreBounded(t *testing.T) {
	body := strings.Repeat("k", 60<<10)
	const bound = maxErrorBytes + 64 // the error and its prefix
	_, err := RecordedBody(`{"a":1}[response.body]`, Response{StatusCode: "200", Body: body})
	if err == nil || len(err.Error()) > bound || !strings.HasPrefix(err.Error(), "bodyExpression failed: no such key: kkk") || !strings.HasSuffix(err.Error(), "… (cut)") {
		t.Errorf("bodyExpression error of %d bytes: %.100q…, want at most %d ending in the mark of a cut", len(err.Error()), err, bound)
	}
	got := Evaluate(Expected{Expression: `{"a":1}[[response.body].map(x, x + x)[0]] == 1`}, Response{StatusCode: "200", Body: body})
	if got.Outcome != NotMatched || len(got.Detail) > bound || !strings.HasPrefix(got.Detail, "expression failed: no such key: kkk") {
		t.Errorf("expression verdict of %d bytes: %.100q…, want NotMatched within %d", len(got.Detail), got.Detail, bound)
	}
}
