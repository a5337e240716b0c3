package controller_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// ingressWatchLag is how late the manager of TestATargetRecreatedByHand
// sees Ingress changes: long enough for a flip to be reconciled while its
// cache still holds the Ingress that was deleted.
const ingressWatchLag = 2 * time.Second

// TestATargetRecreatedByHand deletes a DynamicIngress's Ingress and at
// once creates one of the same name, then flips the state while the
// manager's cache still shows the Ingress that was deleted: the apply
// carries that Ingress's UID as a precondition, and the API server refuses
// it as Invalid ("metadata.uid: field is immutable"), not as a conflict.
// The switch must never show ApplyFailed (condition or event), and must
// end as docs/behaviour.md says: an Ingress created again with the
// switch as its controller (as `kubectl get -o yaml`, delete, create
// would) is the switch's and follows the flip, in place (same UID); one
// created without that owner is someone else's, and is left untouched
// (Ready=False/TargetConflict).
func TestATargetRecreatedByHand(t *testing.T) {
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(delayWatches("ingresses", ingressWatchLag))
	startManagerFor(t, laggingNamespace, cfg, nil)
	ns := laggingNamespace

	for _, tc := range []struct {
		name        string
		keepOwner   bool
		wantBackend string
		wantReady   string
	}{
		{name: "owned", keepOwner: true, wantBackend: "sorry", wantReady: "True/Synced"},
		{name: "foreign", keepOwner: false, wantBackend: "users-own", wantReady: "False/TargetConflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := builders.FixedState(ns, tc.name, "503", "").Obj()
			di := siteSwitch(ns, tc.name, tc.name).ExpectCode("200").Obj()
			create(t, state, di)
			eventually(t, backendOf(t, ns, tc.name)).Should(Equal("web"))
			// Both modes applied once: a body is kept for each, and the
			// flip below applies the kept one.
			for _, step := range []struct{ code, backend string }{{"200", "sorry"}, {"503", "web"}} {
				setFixedStatus(t, state, step.code)
				eventually(t, backendOf(t, ns, tc.name)).Should(Equal(step.backend))
			}
			eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
			eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
			time.Sleep(ingressWatchLag + 500*time.Millisecond) // the cache now holds the last apply

			old := ingressOf(t, ns, tc.name)()
			again := &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name, Labels: old.Labels, Annotations: old.Annotations},
				Spec:       old.Spec,
			}
			if tc.keepOwner {
				again.OwnerReferences = old.OwnerReferences
			} else {
				again.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "users-own"
			}
			if err := k8s.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			create(t, again)
			readies := watchCondition(t, di, v1beta1.ConditionReady)
			setFixedStatus(t, state, "200")

			eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
			eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal(tc.wantReady))
			eventually(t, backendOf(t, ns, tc.name)).Should(Equal(tc.wantBackend))
			if ing := ingressOf(t, ns, tc.name)(); ing == nil || ing.UID != again.UID {
				t.Errorf("the Ingress created by hand (UID %s) was replaced: now %+v", again.UID, ing)
			}
			if tc.keepOwner {
				eventually(t, differenceFromARender(t, di, true)).Should(BeEmpty())
			}
			if seen := readies(); slices.Contains(seen, "False/"+v1beta1.ReasonApplyFailed) {
				t.Errorf("Ready was ApplyFailed on the way: %v", seen)
			}
			if reasons := eventReasons(ns, tc.name)(); slices.Contains(reasons, v1beta1.ReasonApplyFailed) {
				t.Errorf("an ApplyFailed event was recorded: %v", reasons)
			}
		})
	}
}

// watchCondition reads a condition of the switch every 20ms until the test
// ends, and returns a function listing the values seen so far, in order,
// without repeats in a row.
func watchCondition(t *testing.T, di *v1beta1.DynamicIngress, condType string) func() []string {
	var (
		mu   sync.Mutex
		seen []string
	)
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	read := conditionOf(&v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: di.Namespace, Name: di.Name}}, condType)
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			c := read()
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != c {
				seen = append(seen, c)
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
