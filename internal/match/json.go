package match

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// parseJSON decodes a text that is exactly one JSON value, with nothing but
// whitespace around it. Numbers stay json.Number so that they compare
// exactly: float64 would make 9007199254740993 equal to 9007199254740992.
func parseJSON(text string) (any, bool) {
	// json.Valid checks the whole text, so trailing data such as the second
	// "}" of `{"a":1} }` makes it not JSON; a Decoder alone stops after the
	// first value and cannot tell.
	if !json.Valid([]byte(text)) {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// jsonMatch reports whether got matches want: the same JSON value, or with
// contains, a value that contains want (objects may have extra keys, at any
// depth; arrays still match element by element and must have the same
// length, because a partial array has no obvious alignment).
func jsonMatch(want, got any, contains bool) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		return ok && objectMatch(w, g, contains)
	case []any:
		g, ok := got.([]any)
		return ok && arrayMatch(w, g, contains)
	case json.Number:
		g, ok := got.(json.Number)
		return ok && sameNumber(w, g)
	default:
		// string, bool or nil: all comparable, and a value of another type
		// (a map, say) just compares unequal.
		return want == got
	}
}

// objectMatch reports whether got has every key of want with a matching
// value and, unless contains, no other key.
func objectMatch(want, got map[string]any, contains bool) bool {
	if !contains && len(want) != len(got) {
		return false
	}
	for k, wv := range want {
		gv, ok := got[k]
		if !ok || !jsonMatch(wv, gv, contains) {
			return false
		}
	}
	return true
}

// arrayMatch reports whether got has as many elements as want, each
// matching the one at the same index.
func arrayMatch(want, got []any, contains bool) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !jsonMatch(want[i], got[i], contains) {
			return false
		}
	}
	return true
}

// sameNumber reports whether two JSON numbers have the same exact decimal
// value, so 1, 1.0, 10e-1 and 1e0 are one number.
func sameNumber(a, b json.Number) bool {
	return canonicalNumber(string(a)) == canonicalNumber(string(b))
}

// canonicalNumber writes a valid JSON number as sign, significant digits
// and exponent ("-15e-1" for -1.50), one spelling per value. It works on
// the digits rather than through big.Rat, whose SetString expands exponents
// up to a million digits long: a probed body full of 1e999999 would cost
// seconds of CPU, while this stays linear in the text.
func canonicalNumber(num string) string {
	neg := strings.HasPrefix(num, "-")
	num = strings.TrimPrefix(num, "-")
	mantissa, expText, _ := strings.Cut(strings.ToLower(num), "e")
	intPart, fracPart, _ := strings.Cut(mantissa, ".")

	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return "0" // -0 and 0.0e5 are zero too
	}
	trimmed := strings.TrimRight(digits, "0")

	// value = digits × 10^(exponent − len(fracPart)); the exponent may be
	// any length, hence big.Int, which only adds here.
	exp := new(big.Int)
	if expText != "" {
		exp.SetString(expText, 10) // valid JSON: optional sign, then digits
	}
	exp.Sub(exp, big.NewInt(int64(len(fracPart))))
	exp.Add(exp, big.NewInt(int64(len(digits)-len(trimmed))))

	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + exp.String()
}

// jsonValuesAtMost says whether text, read as JSON, holds at most n values,
// without decoding it: every value but the first follows a comma, a colon
// or an opening bracket outside a string (a key and its colon count as one
// value more, so this never counts low). Text that is not JSON may count
// anything; it is not decoded anyway.
func jsonValuesAtMost(text string, n int) bool {
	count := 1
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == ',', c == ':', c == '[', c == '{':
			count++
			if count > n {
				return false
			}
		}
	}
	return true
}

// celNumber is an int64 for a number written as an integer that fits, and
// the nearest float64 otherwise (CEL has no arbitrary precision numbers).
func celNumber(num string) any {
	if !strings.ContainsAny(num, ".eE") {
		if i, err := strconv.ParseInt(num, 10, 64); err == nil {
			return i
		}
	}
	// A valid JSON number always parses; out of range gives ±Inf, which is
	// the nearest double.
	f, _ := strconv.ParseFloat(num, 64)
	return f
}
