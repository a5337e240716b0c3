package v1beta1

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The override audit annotations of a switch: only the defaulting webhook
// writes them.
const (
	OverrideByAnnotation = v1beta1.OverrideByAnnotation
	OverrideAtAnnotation = v1beta1.OverrideAtAnnotation
)

// overrideAuditKeys are the override audit annotations, with the
// approval's, in the order errors name them.
var overrideAuditKeys = []string{OverrideByAnnotation, OverrideAtAnnotation, OverrideApprovedByAnnotation, OverrideApprovedAtAnnotation}

// isApprovalKey says whether key is an approval annotation.
func isApprovalKey(key string) bool {
	return key == OverrideApprovedByAnnotation || key == OverrideApprovedAtAnnotation
}

// overrideAuditForbidden is why an edit of an override audit annotation is
// refused.
const overrideAuditForbidden = "set by the admission webhook when spec.override changes; it cannot be edited"

// AuditOverride sets sw's override audit annotations for an admission
// request of user at now; old is nil on create. When the pin
// (spec.override, with overrideUntil and overrideReason) is set on create,
// or set, changed or removed on update, they name user and now,
// whatever sw carried, and the pin has no approval. An update that asks
// to approve the pin (approvalRequested) has override-approved-by and -at
// name user and now, for the validating webhook to check
// (validateApproval). Otherwise they are what old had (none on create): a
// value a user wrote is overwritten, except in an update that changes
// nothing else, which is left as it came for the validating webhook to
// refuse (validateOverrideAudit), so that the user learns the edit did not
// take.
func AuditOverride(old, sw target.Switch, user string, now time.Time) {
	spec := sw.SwitchSpec()
	var oldSpec *v1beta1.SwitchSpec
	if old != nil {
		s := old.SwitchSpec()
		oldSpec = &s
	}
	switch {
	case old == nil && spec.Override == "":
		setOverrideAudit(sw, nil)
	case pinRemade(oldSpec, spec):
		setOverrideAudit(sw, map[string]string{
			OverrideByAnnotation: user,
			OverrideAtAnnotation: now.UTC().Format(v1beta1.OverrideAtFormat),
		})
	case approvalRequested(old, sw) && decision.ApprovedBy(old.GetAnnotations()) != "":
		// Approved already: left as it came, for the validating webhook
		// to refuse.
	case approvalRequested(old, sw):
		audit := overrideAudit(old)
		audit[OverrideApprovedByAnnotation] = user
		audit[OverrideApprovedAtAnnotation] = now.UTC().Format(v1beta1.OverrideAtFormat)
		setOverrideAudit(sw, audit)
	case onlyOverrideAuditEdited(old, sw):
	default:
		setOverrideAudit(sw, overrideAudit(old))
	}
}

// validateOverrideAudit refuses an update that edits an override audit
// annotation without changing the pin: the defaulting webhook
// writes them, and leaves them edited only when nothing else changed. An
// approval's annotations are validateApproval's to check.
func validateOverrideAudit(old, sw target.Switch) field.ErrorList {
	oldSpec := old.SwitchSpec()
	if pinRemade(&oldSpec, sw.SwitchSpec()) {
		return nil
	}
	approval := approvalRequested(old, sw)
	var errs field.ErrorList
	before, after := old.GetAnnotations(), sw.GetAnnotations()
	for _, key := range overrideAuditKeys {
		if approval && isApprovalKey(key) {
			continue
		}
		was, had := before[key]
		is, has := after[key]
		if had != has || was != is {
			msg := overrideAuditForbidden
			if isApprovalKey(key) {
				msg = approvalForbidden
			}
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(key), msg))
		}
	}
	return errs
}

// onlyOverrideAuditEdited says whether sw differs from old in the override
// audit annotations and in nothing a user edits besides: spec, labels, the
// other annotations, finalizers and owner references.
func onlyOverrideAuditEdited(old, sw target.Switch) bool {
	return !maps.Equal(overrideAudit(old), overrideAudit(sw)) &&
		equality.Semantic.DeepEqual(specOf(old), specOf(sw)) &&
		maps.Equal(old.GetLabels(), sw.GetLabels()) &&
		maps.Equal(withoutOverrideAudit(old.GetAnnotations()), withoutOverrideAudit(sw.GetAnnotations())) &&
		equality.Semantic.DeepEqual(old.GetFinalizers(), sw.GetFinalizers()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), sw.GetOwnerReferences())
}

// overrideAudit is the override audit annotations sw carries.
func overrideAudit(sw target.Switch) map[string]string {
	out := map[string]string{}
	for _, key := range overrideAuditKeys {
		if v, ok := sw.GetAnnotations()[key]; ok {
			out[key] = v
		}
	}
	return out
}

// withoutOverrideAudit is annotations without the override audit ones.
func withoutOverrideAudit(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	for _, key := range overrideAuditKeys {
		delete(out, key)
	}
	return out
}

// setOverrideAudit makes audit sw's override audit annotations, removing
// those audit has not; an object left with no annotation has none.
func setOverrideAudit(sw target.Switch, audit map[string]string) {
	annotations := withoutOverrideAudit(sw.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, audit)
	if len(annotations) == 0 {
		annotations = nil
	}
	sw.SetAnnotations(annotations)
}
