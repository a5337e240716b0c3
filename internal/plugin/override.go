package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// the mode its state would select without the override.
	Mode         string `json:"mode"`
	StateSelects string `json:"stateSelects"`
	State        string `json:"state"`
	// DryRun is "server" or "client" when nothing was written.
	DryRun string `json:"dryRun,omitempty"`
}

// OverrideOptions are how Override writes.
type OverrideOptions struct {
	// DryRun is "" (write), "server" (the API server checks the patch,
	// admission webhooks included, and stores nothing) or "client" (the
	// patch is applied to the switch as read, and nothing is sent).
	DryRun string
	// FieldManager names the writer in the switch's managedFields.
	FieldManager string
}

// String is the line the command prints.
func (r OverrideResult) String() string {
	suffix := ""
	if r.DryRun != "" {
		suffix = fmt.Sprintf(" (%s dry run)", r.DryRun)
	}
	if r.Override == "none" {
		return fmt.Sprintf("%s %q: spec.override removed; it follows state %q, which selects %s mode%s", r.Kind, r.Name, r.State, r.StateSelects, suffix)
	}
	return fmt.Sprintf("%s %q: spec.override pins %s mode; state %q would select %s mode%s", r.Kind, r.Name, r.Mode, r.State, r.StateSelects, suffix)
}

// Override sets spec.override of the switch (removes it for ""), with a
// merge patch, and says what its mode now is and what its state would
// select.
func Override(ctx context.Context, c client.Client, kind target.Kind, ns, name string, mode v1beta1.Mode, opts OverrideOptions) (OverrideResult, error) {
	sw := kind.NewSwitch()
	key := types.NamespacedName{Namespace: ns, Name: name}
	if err := c.Get(ctx, key, sw); err != nil {
		if apierrors.IsNotFound(err) {
			return OverrideResult{}, &NotFoundError{Kind: kind.SwitchKind(), Name: name, Namespace: ns}
		}
		return OverrideResult{}, fmt.Errorf("reading %s %q in namespace %q: %w", kind.SwitchKind(), name, ns, err)
	}
	var value any
	if mode != "" {
		value = mode
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"override": value}})
	if err != nil {
		return OverrideResult{}, err
	}
	if err := patchOverride(ctx, c, sw, patch, opts); err != nil {
		return OverrideResult{}, fmt.Errorf("setting spec.override of %s %q in namespace %q: %w", kind.SwitchKind(), name, ns, err)
	}
	state, err := followedState(ctx, c, sw)
	if err != nil {
		return OverrideResult{}, err
	}
	var live client.Object
	if k := target.Key(sw); k.Namespace == ns {
		live = kind.NewTarget()
		if err := c.Get(ctx, k, live); err != nil {
			if !apierrors.IsNotFound(err) {
				return OverrideResult{}, fmt.Errorf("reading %s %s: %w", kind.TargetGVK().Kind, k, err)
			}
			live = nil
		}
	}
	now := decision.Decide(kind, sw, state, live).Status == metav1.ConditionTrue
	selects := decision.Selected(kind, sw, state, live).Status == metav1.ConditionTrue
	return OverrideResult{Kind: kind.SwitchKind(), Name: name, Override: overrideName(mode), State: sw.SwitchSpec().State.Name, DryRun: opts.DryRun,
		Mode: decision.ModeName(now), StateSelects: decision.ModeName(selects)}, nil
}

// followedState reads the state a switch follows, as the engine decides
// from it: nil when it does not exist or, for a cluster state, when its
// grant does not admit the switch's namespace (or the namespace cannot be
// read to tell).
func followedState(ctx context.Context, c client.Reader, sw target.Switch) (*v1beta1.DynamicIngressState, error) {
	ref := sw.SwitchSpec().State
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: sw.GetNamespace(), Name: ref.Name}, state); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading state %q in namespace %q: %w", ref.Name, sw.GetNamespace(), err)
		}
		return state, nil
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	if err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, state); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: sw.GetNamespace()}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %q, whose labels %s's grant reads: %w", sw.GetNamespace(), ref, err)
	}
	if decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, ns.Name, ns.Labels) != "" {
		return nil, nil
	}
	return state.StateView(), nil
}

// patchOverride sends the merge patch (or, for a client dry run, applies
// it to sw as read), leaving sw as the API server returned it.
func patchOverride(ctx context.Context, c client.Client, sw target.Switch, patch []byte, opts OverrideOptions) error {
	if opts.DryRun == "client" {
		current, err := json.Marshal(sw)
		if err != nil {
			return err
		}
		patched, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return err
		}
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
