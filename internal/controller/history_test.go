package controller_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestStateHistory: each change of a fixed state's response is in its
// status.history, newest first, with what it changed to and why.
func TestStateHistory(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	create(t, state)
	history := func() []string {
		got := &v1beta1.DynamicIngressState{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), got); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range got.Status.History {
			out = append(out, string(rune('0'+e.Sequence))+" "+e.StatusCode+" "+string(e.Cause))
		}
		return out
	}
	eventually(t, history).Should(Equal([]string{"1 200 Fixed"}))
	setFixedStatus(t, state, "503")
	eventually(t, history).Should(Equal([]string{"2 503 Fixed", "1 200 Fixed"}))
	setFixedStatus(t, state, "200")
	eventually(t, history).Should(Equal([]string{"3 200 Fixed", "2 503 Fixed", "1 200 Fixed"}))
	NewWithT(t).Expect(history()).To(HaveLen(3))
}

// TestFlipSummary: once every follower of both kinds shows a change of
// the state, the change's history entry says how many followed it and how
// long the last took.
func TestFlipSummary(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	objs := []client.Object{state}
	for i := range 20 {
		objs = append(objs, builders.DynamicIngress(ns, fmt.Sprintf("web-%03d", i)).State("flag").ExpectCode("503").
			Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj())
	}
	for i := range 2 {
		objs = append(objs, builders.DynamicHTTPRoute(ns, fmt.Sprintf("route-%03d", i)).State("flag").ExpectCode("503").
			Passive(builders.RouteTo("www.example.com", "web")).Active(builders.RedirectTo("www.example.com", "status.example.com")).Obj())
	}
	create(t, objs...)
	for _, o := range objs[1:] {
		eventually(t, conditionOf(o, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	}
	flipOf := func() string {
		got := &v1beta1.DynamicIngressState{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), got); err != nil {
			return err.Error()
		}
		if len(got.Status.History) == 0 {
			return "no history"
		}
		e := got.Status.History[0]
		if e.Flip == nil {
			return e.StatusCode + " no flip"
		}
		return e.StatusCode + " " + strconv.Itoa(int(e.Flip.Followers)) + " followers"
	}
	setFixedStatus(t, state, "503")
	eventually(t, flipOf).Should(Equal("503 22 followers"))
	got := &v1beta1.DynamicIngressState{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(state), got)).To(Succeed())
	after, err := time.ParseDuration(got.Status.History[0].Flip.CompletedAfter)
	if err != nil || after <= 0 || after > 30*time.Second {
		t.Errorf("flip.completedAfter = %q, want a duration of the flip", got.Status.History[0].Flip.CompletedAfter)
	}
	if got.Status.History[1].Flip != nil {
		t.Errorf("the creation's entry has a flip summary %+v, want none (no follower existed then)", got.Status.History[1].Flip)
	}
	setFixedStatus(t, state, "200")
	eventually(t, flipOf).Should(Equal("200 22 followers"))
}
