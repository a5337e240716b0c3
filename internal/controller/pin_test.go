package controller_test

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// pinOf is a switch's status.override as "summary phase", read from the
// API server; "" without one.
func pinOf(sw *v1beta1.DynamicIngress) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(sw), sw); err != nil {
			return err.Error()
		}
		if sw.Status.Override == nil {
			return ""
		}
		return sw.Status.Override.Summary + " " + string(sw.Status.Override.Phase)
	}
}

// TestPinEndsAtItsUntil: a pin with overrideUntil holds the mode until
// then, and then the switch follows its state again with no edit: the
// target takes the state's shape no sooner than the until, status.override
// says Expired, the Active condition's reason is the state's, and one
// OverrideExpired event is recorded.
func TestPinEndsAtItsUntil(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	until := time.Now().Add(4 * time.Second).Truncate(time.Second)
	di := builders.DynamicIngress(ns, "web").State("killswitch").ExpectCode("503").
		Override(v1beta1.ModeActive).OverrideUntil(until).OverrideReason("INC-1234 checkout database failover").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, pinOf(di)).Should(Equal("Active InEffect"))
	g := NewWithT(t)
	g.Expect(di.Status.Override.Reason).To(Equal("INC-1234 checkout database failover"))
	g.Expect(di.Status.Override.Until.Time).To(BeTemporally("==", until))
	g.Expect(conditionOf(di, v1beta1.ConditionActive)()).To(Equal("True/Overridden"))

	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	g.Expect(time.Now()).To(BeTemporally(">=", until), "the pin ended before its overrideUntil")
	eventually(t, pinOf(di)).Should(Equal("Active (Expired) Expired"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, timesIn(eventReasons(ns, "web"), v1beta1.EventReasonOverrideExpired)).Should(Equal(1))
	// Once: later reconciles (a change of the state) record no other.
	setFixedStatus(t, state, "503")
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	g.Expect(timesIn(eventReasons(ns, "web"), v1beta1.EventReasonOverrideExpired)()).To(Equal(1))
	g.Expect(slices.Contains(eventReasons(ns, "web")(), v1beta1.EventReasonOverrideRemoved)).To(BeFalse(), "an expiry is not a removal")
}

// pinStartNamespace belongs to the manager that
// TestPinThatEndedWhileNoManagerRan starts late.
const pinStartNamespace = "pin-start"

// TestPinThatEndedWhileNoManagerRan: a manager that starts after a pin's
// overrideUntil ends the pin at once: the target takes the state's shape,
// status.override says Expired, and one OverrideExpired event is recorded.
func TestPinThatEndedWhileNoManagerRan(t *testing.T) {
	cfg := rest.CopyConfig(testConfig)
	opts := controller.Options{MaxConcurrentReconciles: 2, StateMaxConcurrentReconciles: 2, Namespaces: []string{pinStartNamespace}}
	stop := startOwnManager(t, pinStartNamespace, cfg, controller.CacheOptions(true, true), opts)
	stop()
	state := builders.FixedState(pinStartNamespace, "killswitch", "200", "").Obj()
	di := builders.DynamicIngress(pinStartNamespace, "web").State("killswitch").ExpectCode("503").
		Override(v1beta1.ModeActive).OverrideUntil(time.Now().Add(time.Second)).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, di)
	time.Sleep(2 * time.Second)
	restartOwnManager(t, pinStartNamespace, cfg, controller.CacheOptions(true, true), opts)
	eventually(t, pinOf(di)).Should(Equal("Active (Expired) Expired"))
	eventually(t, backendOf(t, pinStartNamespace, "web")).Should(Equal("web"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, timesIn(eventReasons(pinStartNamespace, "web"), v1beta1.EventReasonOverrideExpired)).Should(Equal(1))
}

// timesIn is how many times reason is among the reasons that list returns.
func timesIn(reasons func() []string, reason string) func() int {
	return func() int {
		n := 0
		for _, r := range reasons() {
			if r == reason {
				n++
			}
		}
		return n
	}
}

// TestPinThatBreaksALaterPolicy: a policy added after a pin was made does
// not end the pin, and the switch's Ready message names the policy it
// breaks.
func TestPinThatBreaksALaterPolicy(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("killswitch").ExpectCode("503").Override(v1beta1.ModeActive).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))

	edit(t, state, func(s *v1beta1.DynamicIngressState) {
		s.Spec.OverridePolicy = &v1beta1.OverridePolicy{RequireReason: true}
	})
	eventually(t, conditionMessage(di, v1beta1.ConditionReady)).Should(Equal(`The pin, made before the policy, breaks it and stays in effect: ` +
		`DynamicIngressState "killswitch" has overridePolicy.requireReason: a pin must say why in overrideReason`))
	NewWithT(t).Expect(backendOf(t, ns, "web")()).To(Equal("sorry"))
	NewWithT(t).Expect(conditionOf(di, v1beta1.ConditionReady)()).To(Equal("True/Synced"))
}

// TestPinAwaitingApproval: a pin to a mode the state's
// overridePolicy.approval names waits: the switch follows its state, its
// status.override says PendingApproval and the Active condition's message
// says the pin awaits approval; once another user's approval is recorded
// (the annotations the admission webhook writes), the pin takes effect
// and names its approver.
func TestPinAwaitingApproval(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "503", "").Obj()
	state.Spec.OverridePolicy = &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive}}}
	di := builders.DynamicIngress(ns, "web").State("killswitch").ExpectCode("503").Override(v1beta1.ModePassive).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	di.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "alice",
		v1beta1.OverrideAtAnnotation: time.Now().UTC().Format(v1beta1.OverrideAtFormat)}
	create(t, state, di)
	eventually(t, pinOf(di)).Should(Equal("Passive (PendingApproval) PendingApproval"))
	g := NewWithT(t)
	g.Expect(backendOf(t, ns, "web")()).To(Equal("sorry"), "a pin awaiting approval decided the target")
	g.Expect(conditionOf(di, v1beta1.ConditionActive)()).To(Equal("True/Matched"))
	g.Expect(conditionMessage(di, v1beta1.ConditionActive)()).To(HaveSuffix(
		`; the pin to Passive mode by alice awaits approval (overridePolicy.approval of DynamicIngressState "killswitch")`))

	edit(t, di, func(sw *v1beta1.DynamicIngress) {
		sw.Annotations[v1beta1.OverrideApprovedByAnnotation] = "bob"
		sw.Annotations[v1beta1.OverrideApprovedAtAnnotation] = time.Now().UTC().Format(v1beta1.OverrideAtFormat)
	})
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	eventually(t, pinOf(di)).Should(Equal("Passive InEffect"))
	g.Expect(di.Status.Override.ApprovedBy).To(Equal("bob"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/Overridden"))
}

// TestPinInEffectBeforeAnApprovalPolicy: an approval policy added after a
// pin took effect does not end the pin (as any policy added later): the
// Ready message names the approval it lacks.
func TestPinInEffectBeforeAnApprovalPolicy(t *testing.T) {
	ns := newNamespace(t)
	state := builders.FixedState(ns, "killswitch", "503", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("killswitch").ExpectCode("503").Override(v1beta1.ModePassive).
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	di.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "alice",
		v1beta1.OverrideAtAnnotation: time.Now().UTC().Format(v1beta1.OverrideAtFormat)}
	create(t, state, di)
	eventually(t, backendOf(t, ns, "web")).Should(Equal("web"))
	eventually(t, pinOf(di)).Should(Equal("Passive InEffect"))

	edit(t, state, func(s *v1beta1.DynamicIngressState) {
		s.Spec.OverridePolicy = &v1beta1.OverridePolicy{Approval: &v1beta1.OverrideApproval{Modes: []v1beta1.Mode{v1beta1.ModePassive}}}
	})
	eventually(t, conditionMessage(di, v1beta1.ConditionReady)).Should(Equal(`The pin, made before the policy, breaks it and stays in effect: ` +
		`DynamicIngressState "killswitch" has overridePolicy.approval for Passive: a pin to Passive mode needs a second person's approval`))
	g := NewWithT(t)
	g.Expect(backendOf(t, ns, "web")()).To(Equal("web"))
	g.Expect(pinOf(di)()).To(Equal("Passive InEffect"))
}
