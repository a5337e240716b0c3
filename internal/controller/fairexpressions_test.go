package controller_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// slowExpression is an admitted expected expression that runs for most
// of its time budget (about 80 ms: a five-level map nest stopped at its
// runtime cost), distinct for each i so that no verdict is shared.
func slowExpression(i int) string {
	return fmt.Sprintf("size(%s) == 7", builders.NestedMaps(5, fmt.Sprintf("response.code + %d", i)))
}

// TestDistinctExpressionsDoNotDelayAnotherNamespace: a namespace whose 500
// switches hold distinct slow expressions flips (each needs its own
// evaluation, about 40 s of one core in all); another namespace's flip of
// 50 switches right after it completes within 3 s, because the switch
// workers never evaluate an expression themselves: the noisy namespace's
// evaluations wait for its own turns (docs/behaviour.md, "Fair shares").
func TestDistinctExpressionsDoNotDelayAnotherNamespace(t *testing.T) {
	const noisySwitches, victimSwitches = 500, 50
	noisy := newNamespace(t)
	noisyState := builders.FixedState(noisy, "flag", "503", "").Obj()
	create(t, noisyState)
	for i := range noisySwitches {
		// 503 fails the status code first: the expressions are not
		// evaluated until the flip.
		create(t, siteSwitch(noisy, fmt.Sprintf("slow-%03d", i), "flag").ExpectCode("200").Expression(slowExpression(i)).Obj())
	}
	t.Cleanup(func() {
		// Their evaluations are dropped once no switch waits for them.
		_ = k8s.DeleteAllOf(ctx, &v1beta1.DynamicIngress{}, client.InNamespace(noisy))
	})
	victim, victimState := passiveSites(t, victimSwitches, nil)
	eventually(t, readyCount(t, noisy)).Should(Equal(noisySwitches))

	setFixedStatus(t, noisyState, "200")
	time.Sleep(200 * time.Millisecond) // the noisy namespace's reconciles are under way
	began := time.Now()
	setFixedStatus(t, victimState, "200")
	NewWithT(t).Eventually(backendsIn(t, victim), 3*time.Second, 20*time.Millisecond).Should(Equal(slices.Repeat([]string{"sorry"}, victimSwitches)),
		"the victim namespace's flip waited for the noisy namespace's expressions")
	t.Logf("the victim namespace's flip of %d took %s beside %d distinct slow expressions", victimSwitches, time.Since(began).Round(time.Millisecond), noisySwitches)
	// The noisy namespace's switches decide in their own time, and none
	// of them flips: every expression is false.
	NewWithT(t).Consistently(backendsIn(t, noisy), time.Second).Should(HaveEach("web"))
}
