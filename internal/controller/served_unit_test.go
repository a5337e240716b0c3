package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestServedAfterAStart: a manager that starts checks once a switch whose
// Served is not True for its current mode, and never one that is served.
func TestServedAfterAStart(t *testing.T) {
	served := func(status metav1.ConditionStatus, mode v1beta1.Mode) *v1beta1.DynamicIngress {
		di := builders.DynamicIngress("shop", "web").State("flag").ExpectCode("503").Obj()
		di.Spec.Served = &v1beta1.ServedCheck{URL: "http://127.0.0.1:1/", Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
		di.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionServed, Status: status, Reason: "x"}}
		di.Status.Served = &v1beta1.ServedStatus{Mode: mode, Since: metav1.Now(), After: "1.00s"}
		return di
	}
	for _, tc := range []struct {
		name      string
		di        *v1beta1.DynamicIngress
		active    bool
		wantCheck bool
	}{
		{"served for its mode", served(metav1.ConditionTrue, v1beta1.ModePassive), false, false},
		{"served for the other mode", served(metav1.ConditionTrue, v1beta1.ModePassive), true, true},
		{"not served", served(metav1.ConditionFalse, v1beta1.ModePassive), false, true},
		{"checking when the last manager stopped", served(metav1.ConditionUnknown, v1beta1.ModePassive), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServedChecks(probe.NewProber(probe.Guard{}, 1024))
			t.Cleanup(s.cancel)
			id := switchID{kind: "DynamicIngress", key: types.NamespacedName{Namespace: "shop", Name: "web"}}
			resumed := 0
			resume := func() {
				resumed++
				s.start(id, tc.di.Spec.Served, tc.active, time.Now(), func(servedResult) {})
			}
			v := s.view(tc.di, id, tc.active, nil, resume)
			_ = s.view(tc.di, id, tc.active, nil, resume)
			if want := map[bool]int{true: 1, false: 0}[tc.wantCheck]; resumed != want {
				t.Errorf("checks started = %d, want %d", resumed, want)
			}
			if tc.wantCheck && (v.cond == nil || v.cond.Reason != v1beta1.ReasonChecking) {
				t.Errorf("Served = %+v, want Checking", v.cond)
			}
			if !tc.wantCheck && (v.cond == nil || v.cond.Status != metav1.ConditionTrue) {
				t.Errorf("Served = %+v, want it kept True", v.cond)
			}
		})
	}
}

// TestKeepPendingEntries: an entry whose verdict is pending keeps the
// verdict the status shows; without one it stays pending.
func TestKeepPendingEntries(t *testing.T) {
	shown := []v1beta1.EntryStatus{{Name: "platform", Matched: "False", Reason: "NotMatched"}, {Name: "window", Matched: "True", Reason: "Matched"}}
	got := keepPendingEntries([]v1beta1.EntryStatus{
		{Name: "platform", Matched: "True", Reason: "Matched"},
		{Name: "window", Matched: "Unknown", Reason: "VerdictPending"},
		{Name: "new", Matched: "Unknown", Reason: "VerdictPending"},
	}, shown)
	want := []v1beta1.EntryStatus{{Name: "platform", Matched: "True", Reason: "Matched"}, {Name: "window", Matched: "True", Reason: "Matched"},
		{Name: "new", Matched: "Unknown", Reason: "VerdictPending"}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
