package match

import (
	"encoding/json"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// jsonAdapter shows a decoded JSON value to CEL as it is read: objects and
// arrays are wrapped, not copied, and an element becomes a CEL value only
// when an expression reaches it. Integers are int (so
// `response.json.count == 3` compares ints), other numbers double.
type jsonAdapter struct{}

// NativeToValue adapts one decoded JSON value.
func (a jsonAdapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		return types.NewStringInterfaceMap(a, v)
	case []any:
		return types.NewDynamicList(a, v)
	case json.Number:
		return types.DefaultTypeAdapter.NativeToValue(celNumber(string(v)))
	default:
		return types.DefaultTypeAdapter.NativeToValue(v) // string, bool, nil, or a CEL value already
	}
}

// readsJSON says whether a checked expression may read response.json: any
// use of the response variable other than response.code or response.body
// counts, so that the body is decoded as JSON only for the expressions
// that need it.
func readsJSON(checked *ast.AST) bool {
	for _, e := range ast.MatchDescendants(ast.NavigateAST(checked), ast.KindMatcher(ast.IdentKind)) {
		if e.AsIdent() != "response" {
			continue
		}
		parent, ok := e.Parent()
		if !ok || parent.Kind() != ast.SelectKind {
			return true
		}
		if f := parent.AsSelect().FieldName(); f != "code" && f != "body" {
			return true
		}
	}
	return false
}
