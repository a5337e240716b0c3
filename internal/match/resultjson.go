package match

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// MaxResultBytes is the longest result a body expression may have, as a
// string or as JSON text: the most a probe reads as a body. A longer
// result is refused while it is written, before it takes more memory than
// this (docs/behaviour.md, "What a probe records").
const MaxResultBytes = 1 << 20

// MaxResultValues is the most values (objects, arrays, strings, numbers,
// booleans and nulls) a body expression's result may hold. Reading a value
// out of CEL allocates a hundred bytes or more whatever its JSON text, and
// an empty object is three bytes of it, so the byte budget alone would let
// a result of a million empty objects allocate a hundred MiB. A state's
// body holds at most 64 KiB, far fewer values than this.
const MaxResultValues = 1 << 14

// errResultTooLarge stops the writing of a result past its budget.
var errResultTooLarge = fmt.Errorf("the result is too large: it is longer than %d bytes or holds more than %d values", MaxResultBytes, MaxResultValues)

// resultText is what a body expression's result records: a string as it
// is, any other value as its JSON text, within limit bytes.
//
// CEL shares values: a list of ten thousand references to one 1 MiB
// string costs an expression almost nothing, and its JSON text is 10 GB.
// So the text is written under a byte budget that every element is
// checked against before it is written, and the first element that does
// not fit stops the writing; so is the number of values read, each of
// which allocates. Memory stays within a few times limit whatever the
// value.
func resultText(v ref.Val, limit int) (string, error) {
	if s, ok := v.(types.String); ok {
		if len(s) > limit {
			return "", errResultTooLarge
		}
		return string(s), nil
	}
	w := budgetWriter{limit: limit, values: MaxResultValues}
	if err := w.value(v); err != nil {
		return "", err
	}
	return w.buf.String(), nil
}

// budgetWriter writes JSON text of at most limit bytes, the way
// encoding/json writes the same value as plain Go values: object keys
// sorted, HTML characters escaped, floats in the shortest form.
type budgetWriter struct {
	buf   bytes.Buffer
	limit int
	// values is how many more values may be read.
	values int
}

// fits says whether n more bytes stay within the budget.
func (w *budgetWriter) fits(n int) bool {
	return n >= 0 && w.buf.Len()+n <= w.limit
}

// write appends b, or refuses it when it does not fit.
func (w *budgetWriter) write(b []byte) error {
	if !w.fits(len(b)) {
		return errResultTooLarge
	}
	w.buf.Write(b)
	return nil
}

// value writes one CEL value as JSON.
func (w *budgetWriter) value(v ref.Val) error {
	if w.values <= 0 {
		return errResultTooLarge
	}
	w.values--
	switch v := v.(type) {
	case types.String:
		return w.str(string(v))
	case types.Bool:
		return w.write(strconv.AppendBool(nil, bool(v)))
	case types.Int:
		return w.write(strconv.AppendInt(nil, int64(v), 10))
	case types.Uint:
		return w.write(strconv.AppendUint(nil, uint64(v), 10))
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("the result %v has no JSON form", f)
		}
		text, _ := json.Marshal(f) // finite: cannot fail
		return w.write(text)
	case types.Null:
		return w.write([]byte("null"))
	case traits.Mapper:
		return w.object(v)
	case traits.Lister:
		return w.list(v)
	case *types.Err:
		return errors.New(v.String())
	default:
		return fmt.Errorf("the result is of type %s, which has no JSON form; convert it with string()", v.Type().TypeName())
	}
}

// str writes a JSON string. Its text is at least len(s)+2 bytes, so a
// string that cannot fit is refused before it is escaped.
func (w *budgetWriter) str(s string) error {
	if !w.fits(len(s) + 2) {
		return errResultTooLarge
	}
	if plainString(s) {
		// The JSON text is the string in quotes: no escaped copy.
		w.buf.WriteByte('"')
		w.buf.WriteString(s)
		return w.write([]byte{'"'})
	}
	text, _ := json.Marshal(s) // strings always encode
	return w.write(text)
}

// plainString says whether encoding/json writes s unchanged between
// quotes: printable ASCII without a quote, a backslash or the HTML
// characters it escapes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// list writes a JSON array. Each element takes at least two bytes (a
// digit and a comma), so a list that cannot fit is refused before its
// first element is read.
func (w *budgetWriter) list(l traits.Lister) error {
	n := sizeOf(l.Size())
	if !w.fits(1+2*n) || n > w.values {
		return errResultTooLarge
	}
	w.buf.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			if err := w.write([]byte{','}); err != nil {
				return err
			}
		}
		if err := w.value(l.Get(types.Int(i))); err != nil {
			return err
		}
	}
	return w.write([]byte{']'})
}

// object writes a JSON object, keys sorted. Each entry takes at least five
// bytes (`"":0,`), so an object that cannot fit is refused before its keys
// are gathered.
func (w *budgetWriter) object(m traits.Mapper) error {
	n := sizeOf(m.Size())
	if !w.fits(1+5*n) || n > w.values {
		return errResultTooLarge
	}
	if n == 0 {
		return w.write([]byte("{}"))
	}
	keys := make([]string, 0, n)
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return fmt.Errorf("the result is a map with a %s key; only string keys have a JSON form", k.Type().TypeName())
		}
		keys = append(keys, string(key))
	}
	slices.Sort(keys)
	w.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			if err := w.write([]byte{','}); err != nil {
				return err
			}
		}
		if err := w.str(k); err != nil {
			return err
		}
		if err := w.write([]byte{':'}); err != nil {
			return err
		}
		if err := w.value(m.Get(types.String(k))); err != nil {
			return err
		}
	}
	return w.write([]byte{'}'})
}

// sizeOf is a collection's size as an int; CEL reports it as a value.
func sizeOf(v ref.Val) int {
	n, ok := v.(types.Int)
	if !ok || n < 0 || int64(n) > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}
