package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestApprove: approve asks for the approval with one patch of the
// approval annotation, conditional on the switch it read (the admission
// webhook, absent here, writes the approver); a switch changed in between,
// a missing switch and one without a pin are errors that say so.
func TestApprove(t *testing.T) {
	pinned := audited(switchFor("storefront", func(w *builders.DynamicIngressWrapper) {
		w.Override(v1beta1.ModePassive).OverrideUntil(pinNow.Add(time.Hour)).OverrideReason("INC-7")
	}, ""))
	unpinned := switchFor("blog", nil, "")

	user, admin := fakeClusterAndAdmin(t, nil, fixedState("503", ""), pinned, unpinned)
	if _, err := Approve(context.Background(), user, target.Ingress{}, ns, "storefront", pinNow); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	got := &v1beta1.DynamicIngress{}
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(pinned), got); err != nil {
		t.Fatal(err)
	}
	if v := got.Annotations[v1beta1.OverrideApprovedByAnnotation]; v != "kubectl-dynamic" {
		t.Errorf("override-approved-by = %q after approve, want the request's placeholder for the webhook to replace", v)
	}

	var nf *NotFoundError
	if _, err := Approve(context.Background(), user, target.Ingress{}, ns, "gone", pinNow); !errors.As(err, &nf) {
		t.Errorf("approving a missing switch: %v, want a NotFoundError", err)
	}
	if _, err := Approve(context.Background(), user, target.Ingress{}, ns, "blog", pinNow); err == nil ||
		err.Error() != `DynamicIngress "blog" in namespace "shop" has no pin to approve: spec.override is not set` {
		t.Errorf("approving a switch without a pin: %v", err)
	}

	conflicted := fakeCluster(t, func(r request) error {
		if r.verb == "patch" {
			return apierrors.NewConflict(schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "dynamicingresses"}, "storefront", errors.New("the object has been modified"))
		}
		return nil
	}, fixedState("503", ""), pinned)
	_, err := Approve(context.Background(), conflicted, target.Ingress{}, ns, "storefront", pinNow)
	if err == nil || !strings.Contains(err.Error(), "changed since it was read (its pin may have changed): look at it again and approve again") {
		t.Errorf("approving a switch changed since it was read: %v", err)
	}
}
