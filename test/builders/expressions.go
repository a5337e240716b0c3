package builders

// NestedMaps is levels of map over the literal list [0,...,9] around inner,
// a CEL expression: each level makes the result ten times as many
// references to inner, which CEL shares at almost no cost, so that the
// result written out is 10^levels copies of inner. The tests of the
// bounds on bodyExpression results use it (docs/behaviour.md, "What a
// probe records").
func NestedMaps(levels int, inner string) string {
	const digits = "[0,1,2,3,4,5,6,7,8,9]"
	s := inner
	for i := levels - 1; i >= 0; i-- {
		s = digits + ".map(" + string(rune('a'+i)) + ", " + s + ")"
	}
	return s
}
