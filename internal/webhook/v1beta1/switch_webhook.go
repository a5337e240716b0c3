package v1beta1

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-dynamicingress,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingresses,verbs=create;update,versions=v1beta1,name=mdynamicingress.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-or-override-audit-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec || ['ingress.dynamicingress.io/override-by', 'ingress.dynamicingress.io/override-at', 'ingress.dynamicingress.io/override-approved-by', 'ingress.dynamicingress.io/override-approved-at'].exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations) != (has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) || has(object.metadata.annotations) && k in object.metadata.annotations && object.metadata.annotations[k] != oldObject.metadata.annotations[k])"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-dynamicingress,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingresses,verbs=create;update,versions=v1beta1,name=vdynamicingress.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-or-override-audit-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec || ['ingress.dynamicingress.io/override-by', 'ingress.dynamicingress.io/override-at', 'ingress.dynamicingress.io/override-approved-by', 'ingress.dynamicingress.io/override-approved-at'].exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations) != (has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) || has(object.metadata.annotations) && k in object.metadata.annotations && object.metadata.annotations[k] != oldObject.metadata.annotations[k])"}]}`

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-dynamichttproute,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamichttproutes,verbs=create;update,versions=v1beta1,name=mdynamichttproute.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-or-override-audit-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec || ['ingress.dynamicingress.io/override-by', 'ingress.dynamicingress.io/override-at', 'ingress.dynamicingress.io/override-approved-by', 'ingress.dynamicingress.io/override-approved-at'].exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations) != (has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) || has(object.metadata.annotations) && k in object.metadata.annotations && object.metadata.annotations[k] != oldObject.metadata.annotations[k])"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-dynamichttproute,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamichttproutes,verbs=create;update,versions=v1beta1,name=vdynamichttproute.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-or-override-audit-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec || ['ingress.dynamicingress.io/override-by', 'ingress.dynamicingress.io/override-at', 'ingress.dynamicingress.io/override-approved-by', 'ingress.dynamicingress.io/override-approved-at'].exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations) != (has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) || has(object.metadata.annotations) && k in object.metadata.annotations && object.metadata.annotations[k] != oldObject.metadata.annotations[k])"}]}`

// SwitchDefaulter defaults DynamicIngresses and DynamicHTTPRoutes:
// spec.target.namespace from metadata.namespace; and records who set,
// changed or removed spec.override, and when, in the override audit
// annotations (AuditOverride).
type SwitchDefaulter[T target.Switch] struct {
	// Now is the clock of the override-at annotation; time.Now when nil.
	Now func() time.Time
}

var (
	_ admission.Defaulter[*v1beta1.DynamicIngress]   = SwitchDefaulter[*v1beta1.DynamicIngress]{}
	_ admission.Defaulter[*v1beta1.DynamicHTTPRoute] = SwitchDefaulter[*v1beta1.DynamicHTTPRoute]{}
)

// Default implements admission.Defaulter.
func (d SwitchDefaulter[T]) Default(ctx context.Context, sw T) error {
	switch o := any(sw).(type) {
	case *v1beta1.DynamicIngress:
		DefaultDynamicIngress(o)
	case *v1beta1.DynamicHTTPRoute:
		DefaultDynamicHTTPRoute(o)
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	var old target.Switch
	if req.Operation == admissionv1.Update {
		before := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
		if err := json.Unmarshal(req.OldObject.Raw, before); err != nil {
			return fmt.Errorf("decoding the old object: %w", err)
		}
		old = before
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	AuditOverride(old, sw, req.UserInfo.Username, now())
	return nil
}

// SwitchValidator validates DynamicIngresses and DynamicHTTPRoutes: the
// static rules, the target not existing yet and no other switch naming it
// (on create), and each template being an object the API server accepts.
// Permanent redirects in the templates, and literal credentials in
// spec.served's headers, are accepted with a warning.
type SwitchValidator[T target.Switch] struct {
	Kind target.Kind
	// Guard is the manager's --probe-deny-cidrs and --probe-allow-hosts,
	// which spec.served is held to as a probe is.
	Guard probe.Guard
	// Reader reads targets live, past any cache, so that one created a
	// moment ago is seen.
	Reader client.Reader
	// Writer sends the dry-run writes that check the templates.
	Writer client.Writer
	// Cache lists switches by the index.Target field index, to find another
	// one naming the same target.
	Cache client.Reader
	// Validate is the kind's static validation (old is nil on create).
	Validate func(old, sw T, guard probe.Guard) field.ErrorList
	// Requests decides who may set or change spec.served: only a user who
	// may create DynamicIngressStates in the namespace (docs/security.md).
	Requests RequestAuthorizer
	// Approvals decides who may approve a pin: a user with the verb
	// approve on the switch (docs/security.md, "Who may approve a pin").
	Approvals ApprovalAuthorizer
}

var (
	_ admission.Validator[*v1beta1.DynamicIngress]   = SwitchValidator[*v1beta1.DynamicIngress]{}
	_ admission.Validator[*v1beta1.DynamicHTTPRoute] = SwitchValidator[*v1beta1.DynamicHTTPRoute]{}
)

// ValidateCreate implements admission.Validator.
func (v SwitchValidator[T]) ValidateCreate(ctx context.Context, sw T) (admission.Warnings, error) {
	var zero T
	errs := v.Validate(zero, sw, v.Guard)
	errs = append(errs, validatePin(nil, sw.SwitchSpec(), time.Now())...)
	if len(errs) == 0 {
		errs = append(errs, validatePinPolicy(ctx, v.Reader, sw.GetNamespace(), nil, sw.SwitchSpec(), time.Now())...)
	}
	errs = append(errs, v.validateServedPermission(ctx, nil, sw)...)
	if len(errs) == 0 {
		errs = append(errs, v.validateNewTarget(ctx, sw)...)
	}
	if len(errs) == 0 {
		errs = append(errs, v.validateAdmitted(ctx, sw, nil)...)
	}
	return switchWarnings(v.Kind, sw), invalid(sw.GetName(), v.Kind.SwitchKind(), errs)
}

// validateNewTarget refuses a target that exists or that another switch
// names, and otherwise dry-runs the templates.
func (v SwitchValidator[T]) validateNewTarget(ctx context.Context, sw T) field.ErrorList {
	key := target.Key(sw)
	existing, err := v.target(ctx, sw)
	if meta.IsNoMatchError(err) {
		return field.ErrorList{noTargetAPI(v.Kind, key.String())}
	}
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "target"), err)}
	}
	other, err := v.otherTargeting(ctx, sw)
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(field.NewPath("spec", "target"), err)}
	case other != "":
		return field.ErrorList{targetTaken(v.Kind, key.Namespace, key.Name, other)}
	case existing != nil:
		return field.ErrorList{targetExists(v.Kind, existing.GetNamespace(), existing.GetName())}
	}
	return v.validateTemplates(ctx, sw, nil)
}

// ValidateUpdate implements admission.Validator. An update that comes
// while the object is being deleted is let through, and so is one that
// leaves the spec and the override audit annotations alone (labels,
// finalizers, the garbage collector at work): checking templates then
// could only block a deletion or a relabelling, for instance when the
// namespace is terminating and refuses even a dry-run write. (The webhook
// configurations' matchConditions keep such updates away already; this
// holds where they are not installed.) An edit of the override audit
// annotations without a change of spec.override is refused, whatever else
// the update does (validateOverrideAudit).
func (v SwitchValidator[T]) ValidateUpdate(ctx context.Context, old, sw T) (admission.Warnings, error) {
	if !sw.GetDeletionTimestamp().IsZero() {
		return nil, nil
	}
	if errs := validateOverrideAudit(old, sw); len(errs) > 0 {
		return nil, invalid(sw.GetName(), v.Kind.SwitchKind(), errs)
	}
	if approvalRequested(old, sw) {
		if errs := v.validateApproval(ctx, old, sw, time.Now()); len(errs) > 0 {
			return nil, invalid(sw.GetName(), v.Kind.SwitchKind(), errs)
		}
	}
	if equality.Semantic.DeepEqual(specOf(old), specOf(sw)) {
		return nil, nil
	}
	errs := v.Validate(old, sw, v.Guard)
	oldSpec := old.SwitchSpec()
	errs = append(errs, validatePin(&oldSpec, sw.SwitchSpec(), time.Now())...)
	if len(errs) == 0 {
		errs = append(errs, validatePinPolicy(ctx, v.Reader, sw.GetNamespace(), &oldSpec, sw.SwitchSpec(), time.Now())...)
	}
	errs = append(errs, v.validateServedPermission(ctx, old.SwitchSpec().Served, sw)...)
	if len(errs) == 0 {
		existing, err := v.target(ctx, sw)
		switch {
		case meta.IsNoMatchError(err):
			errs = append(errs, noTargetAPI(v.Kind, target.Key(sw).String()))
		case err != nil:
			errs = append(errs, field.InternalError(field.NewPath("spec", "target"), err))
		default:
			errs = append(errs, v.validateTemplates(ctx, sw, existing)...)
		}
	}
	// Checked for a reference the old object did not have: the grant is the
	// platform's to edit, and an edit of something else must not fail on it.
	if len(errs) == 0 {
		errs = append(errs, v.validateAdmitted(ctx, sw, old.SwitchSpec().Entries())...)
	}
	return switchWarnings(v.Kind, sw), invalid(sw.GetName(), v.Kind.SwitchKind(), errs)
}

// validateServedPermission refuses spec.served set or changed (old, the
// old object's, nil on create) by a user who may not create
// DynamicIngressStates in the switch's namespace: a served check makes the
// manager send requests, as a probe does. Other changes of a switch with
// spec.served need nothing more.
func (v SwitchValidator[T]) validateServedPermission(ctx context.Context, old *v1beta1.ServedCheck, sw T) field.ErrorList {
	if !servedSetOrChanged(old, sw.SwitchSpec().Served) {
		return nil
	}
	return checkRequestPermission(ctx, v.Requests, field.NewPath("spec", "served"), servedRequests, sw.GetNamespace())
}

// switchWarnings are the admission warnings of a switch that is accepted:
// permanent redirects in its templates and literal credentials in
// spec.served's headers.
func switchWarnings(kind target.Kind, sw target.Switch) admission.Warnings {
	warnings := redirectWarnings(kind, sw)
	if served := sw.SwitchSpec().Served; served != nil {
		warnings = append(warnings, sensitiveHeaderWarnings(field.NewPath("spec", "served", "headers"), kind.SwitchKind(), served.Headers)...)
	}
	return warnings
}

// ValidateDelete implements admission.Validator.
func (SwitchValidator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// specOf is the spec of a switch, to compare two versions of it.
func specOf(sw target.Switch) any {
	switch o := sw.(type) {
	case *v1beta1.DynamicIngress:
		return o.Spec
	case *v1beta1.DynamicHTTPRoute:
		return o.Spec
	}
	return nil
}

// otherTargeting names another switch of the namespace with the same
// target, "" when there is none.
func (v SwitchValidator[T]) otherTargeting(ctx context.Context, sw T) (string, error) {
	list := v.Kind.NewSwitchList()
	if err := v.Cache.List(ctx, list, client.InNamespace(sw.GetNamespace()),
		client.MatchingFields{index.Target: sw.SwitchSpec().Target.Name}); err != nil {
		return "", fmt.Errorf("listing %ss: %w", v.Kind.SwitchKind(), err)
	}
	return otherTargeting(v.Kind.SwitchItems(list), sw), nil
}

// target reads the target live; nil when it does not exist.
func (v SwitchValidator[T]) target(ctx context.Context, sw T) (client.Object, error) {
	obj := v.Kind.NewTarget()
	err := v.Reader.Get(ctx, target.Key(sw), obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading the target %s: %w", v.Kind.TargetGVK().Kind, err)
	}
	return obj, nil
}

// validateTemplates sends each template to the API server as a dry run of
// the object the operator would write (see dryRunRequest).
func (v SwitchValidator[T]) validateTemplates(ctx context.Context, sw T, existing client.Object) field.ErrorList {
	var errs field.ErrorList
	for _, active := range []bool{false, true} {
		rendered, err := target.Render(v.Kind, sw, active)
		if rendered == nil && err == nil {
			continue
		}
		path := field.NewPath(v.Kind.TemplateField(active)).Child("template")
		if err == nil {
			err = v.dryRun(ctx, sw, rendered, existing)
		}
		errs = append(errs, templateErrors(v.Kind, path, field.NewPath("spec", "target", "name"), err)...)
	}
	return errs
}

// dryRunAttempts bounds the dry runs of one template: a dry-run update of
// the target carries its resourceVersion, and the controller may write the
// target between the read and the dry run (a flip under way), or create it
// (a switch edited just after it was created).
const dryRunAttempts = 3

func (v SwitchValidator[T]) dryRun(ctx context.Context, sw T, rendered *unstructured.Unstructured, existing client.Object) error {
	for attempt := 1; ; attempt++ {
		obj, update, err := dryRunRequest(sw, rendered, existing)
		if err != nil {
			return err
		}
		if update {
			err = v.Writer.Update(ctx, obj, client.DryRunAll)
		} else {
			err = v.Writer.Create(ctx, obj, client.DryRunAll)
		}
		// The target changed, or appeared, since it was read.
		raced := update && apierrors.IsConflict(err) || !update && apierrors.IsAlreadyExists(err)
		if !raced || attempt == dryRunAttempts {
			return err
		}
		// The target changed since it was read: read it again.
		if existing, err = v.target(ctx, sw); err != nil {
			return err
		}
	}
}

// validateAdmitted rejects a switch that follows a ClusterDynamicIngressState
// whose grant does not admit its namespace, naming the state and the grant
// (docs/security.md), on the stateRef of the single state or of each entry
// of spec.anyOf or spec.allOf that names it. A state the switch followed
// before (before, the old object's entries on update) is not checked again.
// A cluster state that does not exist yet is accepted: the switch's status
// says so, and it follows the state once it exists and admits the
// namespace. So is one the manager may not read (namespaced mode without
// cluster states): the status says that too.
func (v SwitchValidator[T]) validateAdmitted(ctx context.Context, sw T, before []v1beta1.FollowedEntry) field.ErrorList {
	followedBefore := make(map[v1beta1.StateReference]bool, len(before))
	for _, e := range before {
		followedBefore[e.State] = true
	}
	sws := sw.SwitchSpec()
	var (
		errs field.ErrorList
		ns   *corev1.Namespace
		// notAdmitted is the refusal of each cluster state read, "" for one
		// that admits the namespace or cannot be read.
		notAdmitted = map[string]string{}
	)
	for i, e := range sws.Entries() {
		ref := e.State
		if !ref.IsCluster() || followedBefore[ref] {
			continue
		}
		path := stateRefPath(sws.Combination(), i)
		msg, read := notAdmitted[ref.Name]
		if !read {
			state := &v1beta1.ClusterDynamicIngressState{}
			err := v.Reader.Get(ctx, client.ObjectKey{Name: ref.Name}, state)
			switch {
			case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
				notAdmitted[ref.Name] = ""
				continue
			case err != nil:
				errs = append(errs, field.InternalError(path, fmt.Errorf("reading %s: %w", ref, err)))
				continue
			}
			if ns == nil {
				ns = &corev1.Namespace{}
				if err := v.Reader.Get(ctx, client.ObjectKey{Name: sw.GetNamespace()}, ns); err != nil {
					if apierrors.IsForbidden(err) {
						return errs
					}
					return append(errs, field.InternalError(path, fmt.Errorf("reading namespace %q: %w", sw.GetNamespace(), err)))
				}
			}
			msg = decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, ns.Name, ns.Labels)
			notAdmitted[ref.Name] = msg
		}
		if msg != "" {
			errs = append(errs, field.Forbidden(path, msg))
		}
	}
	return errs
}

// stateRefPath is the path of the stateRef of a switch's i-th entry
// (SwitchSpec.Entries): spec.stateRef for a single state,
// spec.anyOf[i].stateRef or spec.allOf[i].stateRef in a list.
func stateRefPath(c v1beta1.Combination, i int) *field.Path {
	if c == v1beta1.CombinationSingle {
		return field.NewPath("spec", "stateRef")
	}
	return field.NewPath("spec", string(c)).Index(i).Child("stateRef")
}
