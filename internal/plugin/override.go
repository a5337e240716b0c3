package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// UsageError is a command line the plugin cannot run: exit status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// KindOf is the switch kind a KIND of `override KIND/NAME` names: the
// kind, its plural or its short name, in any case, with or without the
// API group.
func KindOf(kinds []target.Kind, name string) (target.Kind, error) {
	n := strings.ToLower(name)
	n = strings.TrimSuffix(n, "."+v1beta1.GroupVersion.Group)
	for _, kind := range kinds {
		singular := strings.ToLower(kind.SwitchKind())
		short := map[string]string{"dynamicingress": "di", "dynamichttproute": "dhr"}[singular]
		if n == singular || n == singular+"s" || n == singular+"es" || n == short {
			return kind, nil
		}
	}
	return nil, &UsageError{fmt.Errorf("%q is not a switch kind: use dynamicingress (di) or dynamichttproute (dhr)", name)}
}

// ParseMode is spec.override for active, passive or none.
func ParseMode(s string) (v1beta1.Mode, error) {
	switch s {
	case "active":
		return v1beta1.ModeActive, nil
	case "passive":
		return v1beta1.ModePassive, nil
	case "none":
		return "", nil
	}
	return "", &UsageError{fmt.Errorf("mode %q: use active, passive or none", s)}
}

// OverrideResult is what `kubectl dynamic override` did.
type OverrideResult struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Override string `json:"override"`
	// Mode is the mode the operator decides for the switch now; StateSelects
	// the mode its state would select without the override. When the
	// plugin could not tell what the state selects (CouldNotTell), both are
	// "unknown", but Mode is the mode spec.override pins.
	Mode         string `json:"mode"`
	StateSelects string `json:"stateSelects"`
	State        string `json:"state"`
	// StateKind is the kind of the state the switch follows.
	StateKind string `json:"stateKind"`
	// Follows is anyOf(N) or allOf(N) for a switch with a list (State and
	// StateKind are then empty): StateSelects is what all its entries
	// select; absent for a single state.
	Follows string `json:"follows,omitempty"`
	// CouldNotTell says why the plugin could not tell what the state
	// selects (the user may not read it): "" when it could.
	CouldNotTell string `json:"couldNotTell,omitempty"`
	// DryRun is "server" or "client" when nothing was written.
	DryRun string `json:"dryRun,omitempty"`
	// Pin is the pin as the switch now has it (who set it, until when,
	// why, its phase); absent after none.
	Pin *PinReport `json:"pin,omitempty"`
}

// OverrideOptions are how Override writes.
type OverrideOptions struct {
	// DryRun is "" (write), "server" (the API server checks the patch,
	// admission webhooks included, and stores nothing) or "client" (the
	// patch is applied to the switch as read, and nothing is sent).
	DryRun string
	// FieldManager names the writer in the switch's managedFields.
	FieldManager string
	// Until and Reason are spec.overrideUntil and spec.overrideReason,
	// written with the pin in the same patch (PinFlags.Pin): nil and ""
	// remove them, so that a new pin never keeps an old one's end.
	Until  *metav1.Time
	Reason string
	// Now is the time the pin is judged at (zero: the clock's).
	Now time.Time
}

// Unknown is the mode Override reports when it could not tell it.
const Unknown = "unknown"

// String is the line the command prints.
func (r OverrideResult) String() string {
	suffix := ""
	if r.DryRun != "" {
		suffix = fmt.Sprintf(" (%s dry run)", r.DryRun)
	}
	if r.Follows != "" {
		return r.listString(suffix)
	}
	if r.CouldNotTell != "" {
		ref := v1beta1.StateReference{Kind: v1beta1.StateKind(r.StateKind), Name: r.State}
		if r.Override == "none" {
			return fmt.Sprintf("%s %q: spec.override removed; it follows %s again; could not tell which mode that selects: %s%s", r.Kind, r.Name, ref, r.CouldNotTell, suffix)
		}
		return fmt.Sprintf("%s %q: %s; could not tell what %s would select: %s%s", r.Kind, r.Name, r.pins(), ref, r.CouldNotTell, suffix)
	}
	if r.Override == "none" {
		return fmt.Sprintf("%s %q: spec.override removed; it follows state %q, which selects %s mode%s", r.Kind, r.Name, r.State, r.StateSelects, suffix)
	}
	return fmt.Sprintf("%s %q: %s; state %q would select %s mode%s", r.Kind, r.Name, r.pins(), r.State, r.StateSelects, suffix)
}

// listString is String for a switch with a list.
func (r OverrideResult) listString(suffix string) string {
	if r.CouldNotTell != "" {
		if r.Override == "none" {
			return fmt.Sprintf("%s %q: spec.override removed; it follows its %s states again; could not tell which mode they select: %s%s", r.Kind, r.Name, r.Follows, r.CouldNotTell, suffix)
		}
		return fmt.Sprintf("%s %q: %s; could not tell what its %s states would select: %s%s", r.Kind, r.Name, r.pins(), r.Follows, r.CouldNotTell, suffix)
	}
	if r.Override == "none" {
		return fmt.Sprintf("%s %q: spec.override removed; it follows its %s states, which select %s mode%s", r.Kind, r.Name, r.Follows, r.StateSelects, suffix)
	}
	return fmt.Sprintf("%s %q: %s; its %s states would select %s mode%s", r.Kind, r.Name, r.pins(), r.Follows, r.StateSelects, suffix)
}

// pins says what the pin now holds: `spec.override pins active mode`,
// then its end, `until 2026-12-02T03:00:00Z (in 2h)`, and its reason,
// `reason "INC-1234"`, when it has them. A pin whose end has passed (only a
// client dry run, which no webhook checks, writes one) says so.
func (r OverrideResult) pins() string {
	p := r.Pin
	if p == nil {
		return fmt.Sprintf("spec.override pins %s mode", r.Mode)
	}
	line := fmt.Sprintf("spec.override pins %s mode", overrideName(p.Mode))
	switch {
	case p.Until == nil:
	case p.Phase == v1beta1.OverridePhaseExpired:
		line += fmt.Sprintf(" until %s, which has passed (%s ago): it follows its state", *p.Until, p.Ago)
	default:
		line += fmt.Sprintf(" until %s (in %s)", *p.Until, p.Left)
	}
	if p.Reason != "" {
		line += fmt.Sprintf(", reason %q", p.Reason)
	}
	if p.Phase == v1beta1.OverridePhasePendingApproval {
		line += "; it awaits approval by a second person (kubectl dynamic approve), and the switch follows its state until then"
	}
	return line
}

// Override sets spec.override of the switch (removes it for ""), with a
// merge patch, and says what its mode now is and what its state would
// select. The patch is all it needs (a client dry run reads the switch
// instead): it then reads the state, and for a Retain policy the target,
// where the user may; when it cannot, the result says why it could not tell
// (CouldNotTell), and the override stands.
func Override(ctx context.Context, c client.Client, kind target.Kind, ns, name string, mode v1beta1.Mode, opts OverrideOptions) (OverrideResult, error) {
	// One merge patch sets or removes all three: null removes a field.
	var value, until, reason any
	if mode != "" {
		value = mode
		if opts.Until != nil {
			until = opts.Until
		}
		if opts.Reason != "" {
			reason = opts.Reason
		}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"override": value, "overrideUntil": until, "overrideReason": reason}})
	if err != nil {
		return OverrideResult{}, err
	}
	sw := kind.NewSwitch()
	sw.SetNamespace(ns)
	sw.SetName(name)
	if err := patchOverride(ctx, c, sw, patch, opts); err != nil {
		if apierrors.IsNotFound(err) {
			return OverrideResult{}, &NotFoundError{Kind: kind.SwitchKind(), Name: name, Namespace: ns}
		}
		return OverrideResult{}, fmt.Errorf("setting spec.override of %s %q in namespace %q: %w", kind.SwitchKind(), name, ns, err)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	policy := followedPolicy(ctx, c, sw)
	pin := pinAt(sw, policy, now)
	result := OverrideResult{Kind: kind.SwitchKind(), Name: name, Override: overrideName(mode), DryRun: opts.DryRun, Pin: pinReport(pin, now)}
	if result.Pin != nil && opts.DryRun == "client" {
		// The audit annotations are the webhook's, which saw nothing.
		result.Pin.By, result.Pin.At = "", nil
	}
	if pin != nil && pin.Phase != v1beta1.OverridePhaseInEffect {
		// The mode is the state's: the pin does not hold.
		mode = ""
	}
	sw = decided(sw, policy, now)
	if sw.SwitchSpec().Combination() != v1beta1.CombinationSingle {
		return overrideList(ctx, c, kind, sw, mode, result), nil
	}
	ref := sw.SwitchSpec().State
	if ref.Kind == "" {
		ref.Kind = v1beta1.StateKindNamespaced
	}
	result.State, result.StateKind = ref.Name, string(ref.Kind)
	state, live, why := decisionInputs(ctx, c, kind, sw)
	if why != "" {
		result.Mode, result.StateSelects, result.CouldNotTell = Unknown, Unknown, why
		if mode != "" {
			result.Mode = decision.ModeName(mode == v1beta1.ModeActive)
		}
		return result, nil
	}
	result.Mode = decision.ModeName(decision.Decide(kind, sw, state, live).Status == metav1.ConditionTrue)
	result.StateSelects = decision.ModeName(decision.Selected(kind, sw, state, live).Status == metav1.ConditionTrue)
	return result, nil
}

// overrideList completes result for a switch with a list: the mode it now
// has and what all its entries select (decision.SelectedOf), or why the
// plugin could not tell (the first state it may not read).
func overrideList(ctx context.Context, c client.Reader, kind target.Kind, sw target.Switch, mode v1beta1.Mode, result OverrideResult) OverrideResult {
	spec := sw.SwitchSpec()
	result.Follows = spec.Summary()
	var entries []decision.Entry
	for _, e := range spec.Entries() {
		// Whether a grant admits the namespace does not depend on the
		// override: the status's word stands at any generation.
		state, why := followedRef(ctx, c, sw, e.State, func() bool { return entryReasonIs(sw, e.Name, v1beta1.ReasonStateNotAdmitted) })
		if why != "" {
			result.Mode, result.StateSelects = Unknown, Unknown
			result.CouldNotTell = fmt.Sprintf("entry %q (%s): %s", e.Name, e.State, why)
			if mode != "" {
				result.Mode = decision.ModeName(mode == v1beta1.ModeActive)
			}
			return result
		}
		entry := decision.Entry{Name: e.Name, Expected: e.Expected, State: state}
		if state == nil {
			nf := decision.NotFound(e.State)
			entry.Why = &nf
		}
		entries = append(entries, entry)
	}
	var live client.Object
	if spec.FailurePolicy == v1beta1.FailurePolicyRetain {
		var why string
		if live, why = liveTarget(ctx, c, kind, sw); why != "" {
			result.Mode, result.StateSelects, result.CouldNotTell = Unknown, Unknown, why
			if mode != "" {
				result.Mode = decision.ModeName(mode == v1beta1.ModeActive)
			}
			return result
		}
	}
	cond, _ := decision.DecideOf(kind, sw, entries, live)
	result.Mode = decision.ModeName(cond.Status == metav1.ConditionTrue)
	result.StateSelects = decision.ModeName(decision.SelectedOf(kind, sw, entries, live).Status == metav1.ConditionTrue)
	return result
}

// decisionInputs reads what the operator decides the switch's mode from:
// the state it follows (nil when there is none it may follow) and, for a
// Retain policy, its live target; or why they could not be read.
func decisionInputs(ctx context.Context, c client.Reader, kind target.Kind, sw target.Switch) (*v1beta1.DynamicIngressState, client.Object, string) {
	state, why := followedState(ctx, c, sw)
	if why != "" || sw.SwitchSpec().FailurePolicy != v1beta1.FailurePolicyRetain {
		// Only Retain keeps the mode the target is in.
		return state, nil, why
	}
	live, why := liveTarget(ctx, c, kind, sw)
	if why != "" {
		return nil, nil, why
	}
	return state, live, ""
}

// liveTarget reads the switch's target: nil when there is none (or it is
// in another namespace, where the operator writes nothing); or why it
// could not be read.
func liveTarget(ctx context.Context, c client.Reader, kind target.Kind, sw target.Switch) (client.Object, string) {
	k := target.Key(sw)
	if k.Namespace != sw.GetNamespace() {
		return nil, ""
	}
	live := kind.NewTarget()
	if err := c.Get(ctx, k, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ""
		}
		return nil, cannotRead(fmt.Sprintf("%s %s", kind.TargetGVK().Kind, k), kind.TargetGVK(), k.Namespace, err)
	}
	return live, ""
}

// followedState reads the state a switch follows, as the engine decides
// from it: nil when it does not exist or, for a cluster state, when its
// grant does not admit the switch's namespace; or why it could not be
// read.
func followedState(ctx context.Context, c client.Reader, sw target.Switch) (*v1beta1.DynamicIngressState, string) {
	return followedRef(ctx, c, sw, sw.SwitchSpec().State, func() bool { return notAdmittedByStatus(sw) })
}

// notAdmittedByStatus says whether the switch's Ready condition says its
// cluster state does not admit its namespace (at any generation: whether
// the grant admits the namespace does not depend on the override).
func notAdmittedByStatus(sw target.Switch) bool {
	ready := meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionReady)
	return ready != nil && ready.Reason == v1beta1.ReasonStateNotAdmitted
}

// followedRef is followedState for the state ref names (the switch's
// single state, or an entry's); statusNotAdmitted says whether the
// switch's status says a cluster state ref does not admit its namespace,
// for a user who may not read the Namespace.
func followedRef(ctx context.Context, c client.Reader, sw target.Switch, ref v1beta1.StateReference, statusNotAdmitted func() bool) (*v1beta1.DynamicIngressState, string) {
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: sw.GetNamespace(), Name: ref.Name}, state); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, ""
			}
			return nil, cannotRead("it", v1beta1.GroupVersion.WithKind(string(v1beta1.StateKindNamespaced)), sw.GetNamespace(), err)
		}
		return state, ""
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	if err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, state); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ""
		}
		return nil, cannotRead("it", v1beta1.GroupVersion.WithKind(string(v1beta1.StateKindCluster)), "", err)
	}
	ns := &corev1.Namespace{}
	err := c.Get(ctx, types.NamespacedName{Name: sw.GetNamespace()}, ns)
	switch {
	case apierrors.IsForbidden(err):
		// Whether the grant admits the namespace does not depend on the
		// override: the operator's last word on it stands.
		if statusNotAdmitted() {
			return nil, ""
		}
		return state.StateView(), ""
	case err != nil:
		return nil, cannotRead(fmt.Sprintf("namespace %q, whose labels its grant reads", sw.GetNamespace()), corev1.SchemeGroupVersion.WithKind("Namespace"), "", err)
	}
	if decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, ns.Name, ns.Labels) != "" {
		return nil, ""
	}
	return state.StateView(), ""
}

// cannotRead says why what (of kind gvk, in namespace ns, "" when
// cluster-scoped) could not be read: the permission it needs, when the
// user lacks it.
func cannotRead(what string, gvk schema.GroupVersionKind, ns string, err error) string {
	if apierrors.IsForbidden(err) {
		where := fmt.Sprintf(" in namespace %q", ns)
		if ns == "" {
			where = " (cluster-scoped)"
		}
		return fmt.Sprintf("reading %s needs get on %s%s, which you lack", what, resourceName(gvk), where)
	}
	return fmt.Sprintf("reading %s: %v", what, oneLineError(err))
}

// oneLineError is err's message on one line.
func oneLineError(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// patchOverride sends the merge patch (or, for a client dry run, applies
// it to sw as read), leaving sw as the API server returned it.
func patchOverride(ctx context.Context, c client.Client, sw target.Switch, patch []byte, opts OverrideOptions) error {
	if opts.DryRun == "client" {
		// Nothing is sent: the switch is read, and patched here.
		if err := c.Get(ctx, client.ObjectKeyFromObject(sw), sw); err != nil {
			return err
		}
		current, err := json.Marshal(sw)
		if err != nil {
			return err
		}
		patched, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return err
		}
		// Unmarshal leaves alone what the JSON lacks: the fields the patch
		// removed would stay. Start from an empty switch.
		v := reflect.ValueOf(sw).Elem()
		v.Set(reflect.Zero(v.Type()))
		return json.Unmarshal(patched, sw)
	}
	var patchOpts []client.PatchOption
	if opts.FieldManager != "" {
		patchOpts = append(patchOpts, client.FieldOwner(opts.FieldManager))
	}
	if opts.DryRun == "server" {
		patchOpts = append(patchOpts, client.DryRunAll)
	}
	return c.Patch(ctx, sw, client.RawPatch(types.MergePatchType, patch), patchOpts...)
}
