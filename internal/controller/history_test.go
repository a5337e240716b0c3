package controller_test

import (
	"testing"

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
