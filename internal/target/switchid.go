package target

import "k8s.io/apimachinery/pkg/types"

// SwitchID names a switch, its kind and key, or one entry of its
// spec.anyOf / spec.allOf (Entry, empty for a single state): the key under
// which the manager's machinery (evaluations, served checks, the flip
// tracker) keeps what it holds for a switch.
type SwitchID struct {
	Kind  string
	Key   types.NamespacedName
	Entry string
}
