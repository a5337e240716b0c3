package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Switches with spec.anyOf or spec.allOf (docs/kubectl-dynamic.md,
// "Switches with several states"): such a switch follows every state its
// entries name, and its mode comes from all of them, so the plugin reads
// the states of the other entries too.

// ReasonNotReadable is the reason the plugin gives an entry whose state
// it may not read (or could not): the entry then counts as Unknown, as
// for a state without an answer. The operator never gives it.
const ReasonNotReadable = "NotReadable"

// ItemEntry is one entry of a switch's spec.anyOf or spec.allOf, as the
// plugin resolved it.
type ItemEntry struct {
	decision.Entry
	// Ref is the state the entry names.
	Ref v1beta1.StateReference
	// Self says the entry names the snapshot's own state: the decision
	// takes the state it is asked about (the state now, or as a preview
	// would have it). State is then nil here.
	Self bool
	// Unreadable says why the plugin could not read the entry's state
	// ("" when it could); Why then says so, and the entry is Unknown.
	Unreadable string
}

// stateKey names a state an entry follows: a DynamicIngressState by
// namespace and name, a ClusterDynamicIngressState by name.
type stateKey struct {
	cluster         bool
	namespace, name string
}

// keyOf is the key of the state ref names for a switch in namespace.
func keyOf(namespace string, ref v1beta1.StateReference) stateKey {
	if ref.IsCluster() {
		return stateKey{cluster: true, name: ref.Name}
	}
	return stateKey{namespace: namespace, name: ref.Name}
}

// follows says whether sw follows the state ref names (a
// DynamicIngressState in sw's namespace, or a cluster state): its single
// state, or a state an entry of spec.anyOf or spec.allOf names.
func follows(sw target.Switch, ref v1beta1.StateReference) bool {
	for _, e := range sw.SwitchSpec().Entries() {
		if sameState(e.State, ref) {
			return true
		}
	}
	return false
}

// sameState says whether a and b name the same state for one switch.
func sameState(a, b v1beta1.StateReference) bool {
	return a.IsCluster() == b.IsCluster() && a.Name == b.Name
}

// stateLookup is what the plugin read of the state a key names: the
// state (nil when it does not exist), or why it could not read it.
type stateLookup func(stateKey) (*v1beta1.DynamicIngressState, string)

// resolveEntries are the entries of a switch with a list (nil for a single
// state), self marking those that name the snapshot's state, the others
// read through lookup. A cluster state that the switch's status, at its
// current generation, says does not admit its namespace is not followed
// (the plugin reads no Namespace: it takes the operator's word).
func resolveEntries(sw target.Switch, self v1beta1.StateReference, lookup stateLookup) []ItemEntry {
	spec := sw.SwitchSpec()
	if spec.Combination() == v1beta1.CombinationSingle {
		return nil
	}
	list := spec.Entries()
	out := make([]ItemEntry, len(list))
	for i, e := range list {
		ie := ItemEntry{Entry: decision.Entry{Name: e.Name, Expected: e.Expected}, Ref: e.State}
		switch {
		case e.State.IsCluster() && entryNotAdmitted(sw, e.Name):
			ie.Why = &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted,
				Message: fmt.Sprintf("%s does not admit namespace %q, as the switch's status says", e.State, sw.GetNamespace())}
		case sameState(e.State, self):
			ie.Self = true
		default:
			state, why := lookup(keyOf(sw.GetNamespace(), e.State))
			switch {
			case why != "":
				ie.Unreadable = why
				ie.Why = &decision.Unfollowed{Reason: ReasonNotReadable, Message: fmt.Sprintf("%s: %s", e.State, why)}
			case state == nil:
				nf := decision.NotFound(e.State)
				ie.Why = &nf
			default:
				ie.State = state
			}
		}
		out[i] = ie
	}
	return out
}

// entryNotAdmitted says whether the switch's status, at its current
// generation, says the state of its entry name does not admit its
// namespace.
func entryNotAdmitted(sw target.Switch, name string) bool {
	active := meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionActive)
	return active != nil && active.ObservedGeneration == sw.GetGeneration() && entryReasonIs(sw, name, v1beta1.ReasonStateNotAdmitted)
}

// entryReasonIs says whether the switch's status.states gives the entry
// name the reason.
func entryReasonIs(sw target.Switch, name, reason string) bool {
	for _, s := range sw.SwitchStatus().States {
		if s.Name == name {
			return s.Reason == reason
		}
	}
	return false
}

// listNotAdmitted says whether every entry of a list that names the
// snapshot's state is not admitted: the switch does not follow that state
// (it is listed apart, as a single follower whose grant does not admit
// it), though its other entries still count.
func listNotAdmitted(entries []ItemEntry, self v1beta1.StateReference) bool {
	named := false
	for _, e := range entries {
		if e.Self {
			return false
		}
		if sameState(e.Ref, self) {
			named = true
		}
	}
	return named
}

// decisionEntries are the item's entries as the decision takes them, with
// state (nil: none) for the entries that name the snapshot's state.
func (it Item) decisionEntries(state *v1beta1.DynamicIngressState) []decision.Entry {
	out := make([]decision.Entry, len(it.Entries))
	for i, e := range it.Entries {
		out[i] = e.Entry
		if e.Self {
			out[i].State = state
			if state == nil {
				nf := decision.NotFound(e.Ref)
				out[i].Why = &nf
			}
		}
	}
	return out
}

// decide is the Active condition the operator decides for the item at now
// (its pin holds only until its end) with state as the snapshot's state
// (nil when there is none to follow), and for a list each entry's verdict:
// decision.Decide, or decision.DecideOf over every entry.
func (it Item) decide(state *v1beta1.DynamicIngressState, now time.Time) (metav1.Condition, []v1beta1.EntryStatus) {
	sw := decided(it.Switch, it.pinPolicy(state), now)
	if it.Entries == nil {
		return decision.Decide(it.Kind, sw, state, it.Live), nil
	}
	return decision.DecideOf(it.Kind, sw, it.decisionEntries(state), it.Live)
}

// stateReader reads, each once, the states that entries name besides the
// snapshot's own: a get of each.
type stateReader struct {
	ctx  context.Context
	c    client.Reader
	read map[stateKey]readState
}

type readState struct {
	state *v1beta1.DynamicIngressState
	why   string
}

func newStateReader(ctx context.Context, c client.Reader) *stateReader {
	return &stateReader{ctx: ctx, c: c, read: map[stateKey]readState{}}
}

// lookup is a stateLookup.
func (r *stateReader) lookup(k stateKey) (*v1beta1.DynamicIngressState, string) {
	if got, ok := r.read[k]; ok {
		return got.state, got.why
	}
	var got readState
	if k.cluster {
		state := &v1beta1.ClusterDynamicIngressState{}
		err := r.c.Get(r.ctx, types.NamespacedName{Name: k.name}, state)
		switch {
		case err == nil:
			got.state = state.StateView()
		case !apierrors.IsNotFound(err):
			got.why = cannotRead("it", v1beta1.GroupVersion.WithKind(string(v1beta1.StateKindCluster)), "", err)
		}
	} else {
		state := &v1beta1.DynamicIngressState{}
		err := r.c.Get(r.ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, state)
		switch {
		case err == nil:
			got.state = state
		case !apierrors.IsNotFound(err):
			got.why = cannotRead("it", v1beta1.GroupVersion.WithKind(string(v1beta1.StateKindNamespaced)), k.namespace, err)
		}
	}
	r.read[k] = got
	return got.state, got.why
}

// withEntries resolves the entries of the items that have a list, the
// snapshot's state being self, the other states read through lookup, and
// marks those that follow self only through entries its grant does not
// admit.
func withEntries(items []Item, self v1beta1.StateReference, lookup stateLookup) {
	for i := range items {
		items[i].Entries = resolveEntries(items[i].Switch, self, lookup)
		if items[i].Entries != nil {
			items[i].NotAdmitted = listNotAdmitted(items[i].Entries, self)
		}
	}
}

// unreadableNotes say, once per state, which states that lists name the
// plugin could not read, and how many switches count them as Unknown.
func unreadableNotes(items []Item) []string {
	type unread struct {
		why      string
		switches map[string]bool
	}
	byRef := map[string]*unread{}
	for _, it := range items {
		for _, e := range it.Entries {
			if e.Unreadable == "" {
				continue
			}
			name := e.Ref.String()
			if !e.Ref.IsCluster() {
				name = fmt.Sprintf("%s in namespace %q", e.Ref, it.Switch.GetNamespace())
			}
			u := byRef[name]
			if u == nil {
				u = &unread{why: e.Unreadable, switches: map[string]bool{}}
				byRef[name] = u
			}
			u.switches[it.Kind.SwitchKind()+"/"+it.Switch.GetNamespace()+"/"+it.Switch.GetName()] = true
		}
	}
	names := make([]string, 0, len(byRef))
	for name := range byRef {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		u := byRef[name]
		n := len(u.switches)
		out = append(out, fmt.Sprintf("%s, named in the anyOf/allOf of %d %s, counts as Unknown there: %s",
			name, n, pluralOf(n, "switch", "switches"), u.why))
	}
	return out
}

// EntryReport is what one entry of a switch's spec.anyOf or spec.allOf
// decides now.
type EntryReport struct {
	Name string `json:"name"`
	// State names the entry's state: NAME for a DynamicIngressState,
	// cdis/NAME for a cluster state.
	State string `json:"state"`
	// Matched is True, False or Unknown; Reason says why (Matched,
	// NotMatched, NoResponse, StateNotFound, StateNotAdmitted, or
	// NotReadable when the plugin may not read the state).
	Matched string `json:"matched"`
	Reason  string `json:"reason"`
}

// entryReports are the verdicts of a list's entries, in its order.
func entryReports(entries []ItemEntry, verdicts []v1beta1.EntryStatus) []EntryReport {
	out := make([]EntryReport, len(entries))
	for i, e := range entries {
		out[i] = EntryReport{Name: e.Name, State: stateArg(e.Ref)}
		if i < len(verdicts) {
			out[i].Matched, out[i].Reason = string(verdicts[i].Matched), verdicts[i].Reason
		}
	}
	return out
}

// stateArg names a state as the plugin's commands take it.
func stateArg(ref v1beta1.StateReference) string {
	if ref.IsCluster() {
		return "cdis/" + ref.Name
	}
	return ref.Name
}

// EntriesLine says, for a switch with a list, what each entry decides:
// `DynamicIngress "web" anyOf(2): platform (cdis/ks) True Matched,
// window (flag) False NotMatched`; "" for a single state.
func (s SwitchReport) EntriesLine() string {
	if s.Combination == "" {
		return ""
	}
	name := fmt.Sprintf("%q", s.Name)
	if s.Namespace != "" {
		name = s.Namespace + "/" + s.Name
	}
	parts := make([]string, len(s.Entries))
	for i, e := range s.Entries {
		parts[i] = fmt.Sprintf("%s (%s) %s %s", e.Name, e.State, e.Matched, e.Reason)
	}
	return fmt.Sprintf("%s %s %s(%d): %s", s.Kind, name, s.Combination, len(s.Entries), strings.Join(parts, ", "))
}
