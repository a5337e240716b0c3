package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// promErrorRatio is the recipe's bodyExpression: the query's value without
// its evaluation time, "0" when there is no sample.
const promErrorRatio = `size(response.json.data.result) == 0 ? "0" : response.json.data.result[0].value[1]`

// TestBodyExpressionRecordsAPrometheusAnswerQuietly: a kill switch on a
// Prometheus error ratio. With bodyExpression the state's status is
// written once while the ratio stays the same, however often the answer's
// timestamp changes (a state probing the same endpoint without it writes
// at every probe); successThreshold 3 ignores one answer with another
// ratio; a lasting one flips the DynamicIngress; no traffic reads "0"; an
// error answer is a ProbeFailed with reason expression, counted, and after
// failureThreshold failurePolicy Retain keeps the mode.
func TestBodyExpressionRecordsAPrometheusAnswerQuietly(t *testing.T) {
	ns := newNamespace(t)
	prom, err := controlplane.StartPrometheus("127.0.0.1:0", "0.02")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Close() })
	state := builders.ProbedState(ns, "error-ratio", prom.URL).Interval(time.Second).Timeout(time.Second / 2).
		FailureThreshold(2).SuccessThreshold(3).BodyExpression(promErrorRatio).Obj()
	raw := builders.ProbedState(ns, "raw", prom.URL).Interval(time.Second).Timeout(time.Second / 2).Obj()
	di := builders.DynamicIngress(ns, "shop").State("error-ratio").Expression(`double(response.body) > 0.05`).
		FailurePolicy(v1beta1.FailurePolicyRetain).
		Passive(builders.IngressTo("shop.example.com", "shop")).
		Active(builders.IngressTo("shop.example.com", "sorry")).Obj()
	create(t, state, raw, di)

	eventually(t, stateStatus(state)).Should(Equal(`200 "0.02"`))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	quietBefore := writesTo(ns, "dynamicingressstates/status")
	// Ten probes of each state: the timestamp changes at every answer.
	time.Sleep(10 * time.Second)
	writes := writesTo(ns, "dynamicingressstates/status") - quietBefore
	rawStatus := &v1beta1.DynamicIngressState{}
	*rawStatus = *raw
	NewWithT(t).Expect(stateStatus(rawStatus)()).To(HavePrefix(`200 "{\"status\":\"success\"`))
	// Every write in these ten seconds is the raw state's: one per probe.
	NewWithT(t).Expect(writes).To(BeNumerically(">=", 7), "writes of the state without bodyExpression over ten probes")
	if err := k8s.Delete(ctx, raw); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	quiet := writesTo(ns, "dynamicingressstates/status")
	time.Sleep(5 * time.Second)
	NewWithT(t).Expect(writesTo(ns, "dynamicingressstates/status")-quiet).To(BeZero(),
		"status writes of the state with bodyExpression over five probes of the same ratio")
	t.Logf("over ten probes: %d status writes without bodyExpression, 0 with it", writes)

	// One answer with another ratio, between answers of the current one.
	prom.Once("0.5")
	NewWithT(t).Consistently(stateStatus(state), 4*time.Second, 100*time.Millisecond).Should(Equal(`200 "0.02"`))
	NewWithT(t).Expect(conditionOf(di, v1beta1.ConditionActive)()).To(Equal("False/NotMatched"))

	// No traffic: the guard reads "0".
	prom.Set("")
	eventually(t, stateStatus(state)).Should(Equal(`200 "0"`))

	// A lasting high ratio flips the DynamicIngress.
	prom.Set("0.31")
	eventually(t, stateStatus(state)).Should(Equal(`200 "0.31"`))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("sorry"))

	// Prometheus answers an error: a failure with reason expression, whose
	// message never holds the body; after failureThreshold the response
	// is cleared and Retain keeps the DynamicIngress active.
	failures := failuresByReason(t, ns, state.Name, "expression")
	prom.Fail(true)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	ready := readyMessage(t, state)
	endpoint, _, _ := strings.Cut(prom.URL, "?")
	NewWithT(t).Expect(ready).To(Equal("GET " + endpoint + ": bodyExpression failed: no such key: data"))
	eventually(t, stateStatus(state)).Should(Equal(` ""`))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/NoResponse"))
	NewWithT(t).Expect(backendOf(t, ns, "shop")()).To(Equal("sorry"))
	NewWithT(t).Expect(failuresByReason(t, ns, state.Name, "expression") - failures).To(BeNumerically(">=", 2))
}

// readyMessage is the message of a state's Ready condition.
func readyMessage(t *testing.T, state *v1beta1.DynamicIngressState) string {
	t.Helper()
	for _, c := range state.Status.Conditions {
		if c.Type == v1beta1.ConditionReady {
			return c.Message
		}
	}
	return ""
}
