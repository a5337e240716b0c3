package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestNotifierResendsAfterACrash: a change the sink did not take before
// the manager crashed is sent by the next manager, from the state's
// history and the notifier's status.delivered (docs/notifications.md,
// Guarantees).
func TestNotifierResendsAfterACrash(t *testing.T) {
	ns := newNamespace(t, "notifier-crash")
	sink := suite.NewSink(t)
	kubectl(t, stateManifest(ns, "flag", "200"), "apply", "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dis/flag", "--timeout=30s")
	kubectl(t, fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressNotifier
metadata: {namespace: %s, name: oncall}
spec:
  states: [{kind: DynamicIngressState, name: flag}]
  events: [StateChanged]
  sink: {url: %q}
`, ns, sink.URL), "apply", "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dnotify/oncall", "--timeout=30s")

	sink.SetAnswer(func(int) int { return http.StatusServiceUnavailable })
	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	g := NewWithT(t)
	g.Eventually(func() int { return len(sink.Requests()) }, 30*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 1))
	g.Expect(sink.Received()).To(BeEmpty())

	killManager()
	sink.SetAnswer(nil)
	if err := startManager(); err != nil {
		t.Fatalf("restarting the manager: %v", err)
	}
	g.Eventually(func() []string {
		var out []string
		for _, n := range sink.Received() {
			out = append(out, n.Type+" "+string(n.Data))
		}
		return out
	}, 60*time.Second, 100*time.Millisecond).Should(ConsistOf(ContainSubstring(`io.dynamicingress.statechanged {"state":{"kind":"DynamicIngressState","namespace":"` + ns + `","name":"flag"},"sequence":2,`)))
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.status.delivered[0].sequence}=2", "dnotify/oncall", "--timeout=30s")
}
