package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// exerciseEveryKind has the manager use every permission its role grants:
// a state, a DynamicIngress and a DynamicHTTPRoute created through the
// webhooks (which read the targets and dry-run them as creates), their
// statuses written, their targets created, one changed (a dry-run update
// at admission, an apply by the controller), then both deleted when the
// state flips. It fails when any of that does not happen.
func exerciseEveryKind(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "shop"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
		Active(builders.IngressTo("site.example.com", "web")).Obj()
	dhr := builders.DynamicHTTPRoute(ns, "route").State("flag").ExpectCode("200").
		Active(builders.RouteTo("route.example.com", "web")).Obj()
	for _, o := range []client.Object{state, di, dhr} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	ingress, route := &networkingv1.Ingress{}, &gatewayv1.HTTPRoute{}
	poll(t, 30*time.Second, "the state's status and both targets, Ready", func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil || state.Status.StatusCode != "200" {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(di), di); err != nil || !meta.IsStatusConditionTrue(di.Status.Conditions, v1beta1.ConditionReady) {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dhr), dhr); err != nil || !meta.IsStatusConditionTrue(dhr.Status.Conditions, v1beta1.ConditionReady) {
			return false, err
		}
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site"}, ingress) == nil &&
			c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, route) == nil, nil
	})

	// Merge patches, not updates: the manager writes these objects' statuses
	// meanwhile, and an update of the version read above could conflict.
	patch := client.MergeFrom(di.DeepCopy())
	di.Spec.ActiveIngress.Template.Spec.Rules[0].Host = "www.example.com"
	if err := c.Patch(ctx, di, patch); err != nil {
		t.Fatalf("changing the DynamicIngress's active Ingress: %v", err)
	}
	poll(t, 30*time.Second, "the Ingress to follow the changed template", func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site"}, ingress); err != nil {
			return false, err
		}
		return ingress.Spec.Rules[0].Host == "www.example.com", nil
	})

	// No passive template: passive mode means no target.
	patch = client.MergeFrom(state.DeepCopy())
	state.Spec.FixedResponse.Status = "503"
	if err := c.Patch(ctx, state, patch); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "both targets deleted after the state flipped", func() (bool, error) {
		errIngress := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site"}, &networkingv1.Ingress{})
		errRoute := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "route"}, &gatewayv1.HTTPRoute{})
		return apierrors.IsNotFound(errIngress) && apierrors.IsNotFound(errRoute), nil
	})
}

// forbiddenLines returns the lines of a manager log that say the API
// server refused it something.
func forbiddenLines(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "forbidden") || strings.Contains(line, "Forbidden") {
			out = append(out, line)
		}
	}
	return out
}
