package controller_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// pinData is the data of an Overridden or an OverrideExpired as a sink
// reads it.
type pinData struct {
	Switch struct {
		Kind, Namespace, Name string
	} `json:"switch"`
	Override string `json:"override"`
	By       string `json:"by"`
	At       string `json:"at"`
	Until    string `json:"until"`
	Reason   string `json:"reason"`
	Follows  string `json:"follows"`
}

func pinDataOf(t *testing.T, n suite.Notification) pinData {
	t.Helper()
	var d pinData
	if err := json.Unmarshal(n.Data, &d); err != nil {
		t.Fatalf("data of %s: %v in %s", n.ID, err, n.Data)
	}
	return d
}

// requestTypes are the types of every request a sink received, resent
// ones included.
func requestTypes(sink *suite.Sink) func() []string {
	return func() []string {
		var out []string
		for _, n := range sink.Requests() {
			out = append(out, n.Type)
		}
		return out
	}
}

// pin pins sw to Active until until for reason, writing the override
// audit as the defaulting webhook would (this suite runs no webhook); it
// returns the audit's time.
func pin(t *testing.T, sw *v1beta1.DynamicIngress, by string, until time.Time, reason string) time.Time {
	t.Helper()
	at := time.Now().UTC()
	edit(t, sw, func(d *v1beta1.DynamicIngress) {
		d.Spec.Override = v1beta1.ModeActive
		d.Spec.OverrideUntil = &metav1.Time{Time: until}
		d.Spec.OverrideReason = reason
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: by, v1beta1.OverrideAtAnnotation: at.Format(v1beta1.OverrideAtFormat)}
	})
	return at
}

// TestNotifierOverrideExpired: a follower pinned with overrideUntil a few
// seconds ahead: the notifiers hear of the pin with its reason; when the
// pin ends (its status.override turns Expired, nothing else changes) a
// notifier that sends every type gets exactly one OverrideExpired, no
// sooner than the until, recorded in its status; a new pin afterwards is
// sent, and its expiry once in turn. A notifier that lists Overridden
// alone gets the pins, with their reasons, and no expiry.
func TestNotifierOverrideExpired(t *testing.T) {
	ns := newNamespace(t)
	sink, slack := suite.NewSink(t), suite.NewSink(t)
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	sw := builders.DynamicIngress(ns, "storefront").State("killswitch").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, sw)
	eventually(t, conditionOf(sw, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	all := builders.Notifier(ns, "audit", sink.URL).State("killswitch").Obj()
	overridden := builders.Notifier(ns, "oncall", slack.URL).State("killswitch").Slack().Events(v1beta1.NotificationOverridden).Obj()
	create(t, all, overridden)
	eventually(t, notifierReady(all)).Should(Equal("True/Idle"))
	eventually(t, notifierReady(overridden)).Should(Equal("True/Idle"))

	until := time.Now().Add(5 * time.Second).Truncate(time.Second)
	at := pin(t, sw, "alice", until, "INC-1234")
	eventually(t, requestTypes(sink)).Should(Equal([]string{"io.dynamicingress.overridden"}))
	g := NewWithT(t)
	d := pinDataOf(t, sink.Received()[0])
	g.Expect(d.Reason).To(Equal("INC-1234"))
	g.Expect(d.Until).To(Equal(until.UTC().Format(time.RFC3339)))
	wantText := fmt.Sprintf("DynamicIngress %s/storefront: overridden to Active by alice at %s until %s: INC-1234",
		ns, at.Format(v1beta1.OverrideAtFormat), until.UTC().Format(time.RFC3339))
	eventually(t, texts(slack)).Should(Equal([]string{wantText}))

	// The pin ends: the switch's status alone changes.
	eventually(t, requestTypes(sink)).Should(Equal([]string{"io.dynamicingress.overridden", "io.dynamicingress.overrideexpired"}))
	g.Expect(time.Now()).To(BeTemporally(">=", until), "OverrideExpired before the pin's overrideUntil")
	g.Consistently(requestTypes(sink), 3*time.Second).Should(HaveLen(2), "OverrideExpired sent again")
	expired := sink.Received()[1]
	uid := switchUID(t, sw)
	g.Expect(expired.ID).To(Equal(fmt.Sprintf("%s/overrideexpired/%d/%d", uid, until.Unix(), at.Unix())))
	g.Expect(expired.Time).To(BeTemporally("==", until))
	g.Expect(pinDataOf(t, expired)).To(Equal(pinData{
		Switch:   struct{ Kind, Namespace, Name string }{"DynamicIngress", ns, "storefront"},
		Override: "Active", By: "alice", At: at.Truncate(time.Second).Format(time.RFC3339),
		Until: until.UTC().Format(time.RFC3339), Reason: "INC-1234", Follows: "killswitch",
	}))
	status := notifierStatus(t, all)
	g.Expect(status.LastDelivery.Type).To(Equal(v1beta1.NotificationOverrideExpired))
	g.Expect(status.Overrides).To(HaveLen(1))
	g.Expect(status.Overrides[0].Expired).NotTo(BeNil(), "status.overrides[0].expired")
	g.Expect(status.Overrides[0].Expired.Until.Time).To(BeTemporally("==", until))
	g.Expect(slack.Requests()).To(HaveLen(1), "a notifier that lists Overridden alone got the expiry")

	// A new pin, and its own expiry.
	until2 := time.Now().Add(4 * time.Second).Truncate(time.Second)
	pin(t, sw, "bob", until2, "INC-1235")
	eventually(t, requestTypes(sink)).Should(Equal([]string{"io.dynamicingress.overridden", "io.dynamicingress.overrideexpired",
		"io.dynamicingress.overridden", "io.dynamicingress.overrideexpired"}))
	g.Consistently(requestTypes(sink), 3*time.Second).Should(HaveLen(4), "the second OverrideExpired sent again")
	g.Expect(pinDataOf(t, sink.Received()[2]).Reason).To(Equal("INC-1235"))
	g.Expect(pinDataOf(t, sink.Received()[3]).Until).To(Equal(until2.UTC().Format(time.RFC3339)))
	g.Expect(slack.Requests()).To(HaveLen(2))
}

// switchUID is a switch's UID.
func switchUID(t *testing.T, sw *v1beta1.DynamicIngress) string {
	t.Helper()
	got := &v1beta1.DynamicIngress{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sw), got)).To(Succeed())
	return string(got.UID)
}
