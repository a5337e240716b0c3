package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// PreviewReport is what `kubectl dynamic preview` prints (its -o json
// shape: fields may be added, never renamed).
type PreviewReport struct {
	Changes []Change `json:"changes"`
	// Notes say what the plugin could not read (Snapshot.Notes): a state
	// of an entry it may not read counts as Unknown.
	Notes []string `json:"notes,omitempty"`
}

// Change is a switch that would change mode, and what its target would
// undergo.
type Change struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Target string `json:"target"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Diff is the unified diff of the target's manifest, from the live
	// object to what a server-side dry run of the operator's write returns.
	Diff string `json:"diff"`
	// Action is what the operator's write would do to the target: create,
	// update, delete, or none (it leaves the target alone).
	Action string `json:"action"`
	// Note says why there is no diff: the operator would leave the target
	// alone.
	Note string `json:"note,omitempty"`
	// Follows is anyOf(N) or allOf(N) for a switch with a list, whose
	// modes come from all its entries; absent for a single state.
	Follows string `json:"follows,omitempty"`

	item   Item
	active bool
}

// Answer is a response the state could give: what `preview --status`
// names.
type Answer struct {
	StatusCode string
	Body       string
}

// WithAnswer is the state as it would be if it answered a.
func WithAnswer(state *v1beta1.DynamicIngressState, a Answer) *v1beta1.DynamicIngressState {
	out := state.DeepCopy()
	out.Status.StatusCode, out.Status.Body, out.Status.BodyTruncated = a.StatusCode, a.Body, false
	if fixed := out.Spec.FixedResponse; fixed != nil {
		// The operator follows a fixed state's spec (decision.Followed):
		// the answer is what the spec would say.
		fixed.Status, fixed.Body = a.StatusCode, a.Body
	}
	return out
}

// ScheduledAt is a schedule state as it would be at the moment at; an
// error when the state is not a schedule state.
func ScheduledAt(state *v1beta1.DynamicIngressState, at time.Time) (*v1beta1.DynamicIngressState, error) {
	if state.Spec.Schedule == nil {
		return nil, fmt.Errorf("--at is for a schedule state; state %q in namespace %q has no spec.schedule", state.Name, state.Namespace)
	}
	out := state.DeepCopy()
	out.Status, _ = decision.ScheduledStatus(state, metav1.NewTime(at))
	return out, nil
}

// Changes are the switches of the snapshot whose mode the operator would
// change if the state were would: for each, the mode decided from the
// state as it is (from) and from would (to), by the operator's own
// decision; for a switch with anyOf or allOf, with the other entries'
// states as they are now. A follower the grant does not admit never
// changes with the state's answer. Diffs are left empty (see
// DryRunDiffs).
func Changes(snap *Snapshot, would *v1beta1.DynamicIngressState) []Change {
	changes := []Change{}
	for _, item := range snap.Items {
		if item.NotAdmitted {
			// Its failurePolicy decides, whatever the state answers.
			continue
		}
		now, _ := item.decide(snap.State, snap.Now)
		then, _ := item.decide(would, snap.Now)
		from, to := now.Status == metav1.ConditionTrue, then.Status == metav1.ConditionTrue
		if from == to {
			continue
		}
		ch := Change{Kind: item.Kind.SwitchKind(), Name: item.Switch.GetName(),
			Target: target.Key(item.Switch).String(), From: decision.ModeName(from), To: decision.ModeName(to),
			item: item, active: to}
		if item.Entries != nil {
			ch.Follows = item.Switch.SwitchSpec().Summary()
		}
		changes = append(changes, ch)
	}
	return changes
}

// DryRunDiffs fills in each change's diff: the operator's write (a
// server-side apply with its field manager, or a delete when the mode has
// no target) sent as a dry run, compared with the live target. Nothing is
// written. workers bounds the dry runs in flight.
func DryRunDiffs(ctx context.Context, c client.Client, changes []Change, workers int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := dryRunDiff(ctx, c, &changes[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range changes {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func dryRunDiff(ctx context.Context, c client.Client, ch *Change) error {
	kind, sw, live := ch.item.Kind, ch.item.Switch, ch.item.Live
	targetKind := kind.TargetGVK().Kind
	key := target.Key(sw)
	ch.Action = "none"
	switch {
	case key.Namespace != sw.GetNamespace():
		ch.Note = fmt.Sprintf("spec.target.namespace %q is not the %s's own namespace: the operator writes nothing", key.Namespace, kind.SwitchKind())
		return nil
	case live != nil && !metav1.IsControlledBy(live, sw):
		ch.Note = fmt.Sprintf("%s %s is not controlled by this %s: the operator leaves it alone", targetKind, key, kind.SwitchKind())
		return nil
	}
	desired, err := target.Render(kind, sw, ch.active)
	if err != nil {
		return fmt.Errorf("rendering the %s template of %s %q: %w", ch.To, kind.SwitchKind(), sw.GetName(), err)
	}
	before, err := manifest(kind, live)
	if err != nil {
		return err
	}
	var after string
	switch {
	case desired == nil && live == nil:
		ch.Note = fmt.Sprintf("no %s in either mode", targetKind)
		return nil
	case desired == nil:
		ch.Action = "delete"
		obj := kind.NewTarget()
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		uid := live.GetUID()
		if err := c.Delete(ctx, obj, client.DryRunAll, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return dryRunFailed("deleting", "delete", kind, key.String(), err)
		}
	default:
		// An apply with the operator's field manager, forced, as the
		// operator sends it: the server fills in defaults and keeps the
		// fields other managers own.
		ch.Action = "update"
		if live == nil {
			ch.Action = "create"
		}
		obj := &unstructured.Unstructured{Object: desired.Object}
		//nolint:staticcheck // client.Apply with an unstructured object is what the operator sends too.
		if err := c.Patch(ctx, obj, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner(v1beta1.FieldOwner)); err != nil {
			return dryRunFailed("applying", "patch", kind, key.String(), err)
		}
		if after, err = manifest(kind, obj); err != nil {
			return err
		}
	}
	ch.Diff, err = unifiedDiff(key.String(), before, after)
	return err
}

// dryRunFailed says why a dry run of doing something to a target failed;
// when the user may not, it names the permission the preview needs (the
// API server's message names the user and the verb): a dry run is checked
// like the write it rehearses.
func dryRunFailed(doing, verb string, kind target.Kind, key string, err error) error {
	gvk := kind.TargetGVK()
	if apierrors.IsForbidden(err) {
		// ingresses.networking.k8s.io, httproutes.gateway.networking.k8s.io
		resource := strings.ToLower(kindPlural(gvk.Kind)) + "." + gvk.Group
		return fmt.Errorf("preview needs %s on %s (its server-side dry runs are checked like the writes they rehearse; kubectl dynamic status and wait need read access only): dry run of %s %s %s: %w",
			verb, resource, doing, gvk.Kind, key, err)
	}
	return fmt.Errorf("dry run of %s %s %s: %w", doing, gvk.Kind, key, err)
}

// manifest is a target as YAML without its managedFields and status, ""
// for none.
func manifest(kind target.Kind, obj client.Object) (string, error) {
	if obj == nil {
		return "", nil
	}
	content, err := toMap(obj)
	if err != nil {
		return "", err
	}
	// Typed objects read from the API server have no apiVersion and kind.
	content["apiVersion"], content["kind"] = kind.TargetGVK().GroupVersion().String(), kind.TargetGVK().Kind
	if md, ok := content["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	delete(content, "status")
	out, err := yaml.Marshal(content)
	return string(out), err
}

func toMap(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy().Object, nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

// unifiedDiff is the unified diff from before to after, with the files
// named as kubectl diff names them; creation and deletion diff from and
// to /dev/null.
func unifiedDiff(name, before, after string) (string, error) {
	from, to := "live/"+name, "dry-run/"+name
	if before == "" {
		from = "/dev/null"
	}
	if after == "" {
		to = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(before), B: difflib.SplitLines(after),
		FromFile: from, ToFile: to, Context: 3,
	})
}

// PreviewOf reads the state ref names and its switches (ReadState),
// makes of the state what it would be with would (WithAnswer, ScheduledAt),
// and returns that state and the changes it would bring, each with its
// dry-run diff (DryRunDiffs, workers in flight): what `kubectl dynamic
// preview` shows.
func PreviewOf(ctx context.Context, c client.Client, kinds []target.Kind, ns string, ref v1beta1.StateReference, workers int,
	would func(*v1beta1.DynamicIngressState) (*v1beta1.DynamicIngressState, error)) (*v1beta1.DynamicIngressState, PreviewReport, error) {
	snap, err := ReadState(ctx, c, kinds, ns, ref)
	if err != nil {
		return nil, PreviewReport{}, err
	}
	state, err := would(snap.State)
	if err != nil {
		return nil, PreviewReport{}, err
	}
	report := PreviewReport{Changes: Changes(snap, state), Notes: snap.Notes}
	return state, report, DryRunDiffs(ctx, c, report.Changes, workers)
}
