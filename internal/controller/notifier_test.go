package controller_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// notifierStatus reads a notifier's status.
func notifierStatus(t *testing.T, n *v1beta1.DynamicIngressNotifier) v1beta1.DynamicIngressNotifierStatus {
	t.Helper()
	got := &v1beta1.DynamicIngressNotifier{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
	return got.Status
}

// notifierReady is a notifier's Ready condition as "Status/Reason".
func notifierReady(n *v1beta1.DynamicIngressNotifier) func() string {
	return func() string {
		got := &v1beta1.DynamicIngressNotifier{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(n), got); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionReady)
		if c == nil {
			return "no Ready"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// notifiedFlag is a fixed state "flag" answering 200 in a namespace of its
// own, and a notifier "oncall" of it posting events (all when none) in
// format to a sink on loopback, once the notifier is Ready/Idle.
func notifiedFlag(t *testing.T, format v1beta1.SinkFormat, events ...v1beta1.NotificationType) (*suite.Sink, *v1beta1.DynamicIngressState, *v1beta1.DynamicIngressNotifier) {
	t.Helper()
	ns := newNamespace(t)
	sink := suite.NewSink(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	create(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	notifier := builders.Notifier(ns, "oncall", sink.URL).State("flag").Events(events...).Obj()
	notifier.Spec.Sink.Format = format
	create(t, notifier)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Idle"))
	return sink, state, notifier
}

// flipData is the data of a FlipCompleted as a sink reads it.
type flipData struct {
	Sequence       int64  `json:"sequence"`
	Followers      int32  `json:"followers"`
	CompletedAfter string `json:"completedAfter"`
	From           *struct {
		StatusCode string `json:"statusCode"`
	} `json:"from"`
	To *struct {
		StatusCode string `json:"statusCode"`
	} `json:"to"`
	Cause   string `json:"cause"`
	Dropped int64  `json:"dropped"`
}

func dataOf(t *testing.T, n suite.Notification) flipData {
	t.Helper()
	var d flipData
	if err := json.Unmarshal(n.Data, &d); err != nil {
		t.Fatalf("data of %s: %v in %s", n.ID, err, n.Data)
	}
	return d
}

// TestNotifierFlipOf200: a flip of 200 switches gives one StateChanged and
// one FlipCompleted, with the count of followers and how long the flip
// took, as CloudEvents 1.0; never one per follower.
func TestNotifierFlipOf200(t *testing.T) {
	ns := newNamespace(t)
	sink := suite.NewSink(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	objs := []client.Object{state}
	for i := range 200 {
		objs = append(objs, builders.DynamicIngress(ns, fmt.Sprintf("web-%03d", i)).State("flag").ExpectCode("503").
			Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj())
	}
	create(t, objs...)
	for _, o := range objs[1:] {
		eventually(t, conditionOf(o, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	}
	notifier := builders.Notifier(ns, "oncall", sink.URL).State("flag").
		Events(v1beta1.NotificationStateChanged, v1beta1.NotificationFlipCompleted).Obj()
	create(t, notifier)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Idle"))

	setFixedStatus(t, state, "503")
	eventually(t, sink.Types).Should(Equal([]string{"io.dynamicingress.statechanged", "io.dynamicingress.flipcompleted"}))
	NewWithT(t).Consistently(sink.Requests, 2*time.Second).Should(HaveLen(2))

	got := sink.Received()
	uid := stateUID(t, state)
	changed, completed := got[0], got[1]
	g := NewWithT(t)
	g.Expect(changed.SpecVersion).To(Equal("1.0"))
	g.Expect(changed.Header).To(Equal("application/cloudevents+json"))
	g.Expect(changed.Source).To(Equal("/namespaces/" + ns + "/dynamicingressstates/flag"))
	g.Expect(changed.Subject).To(Equal("flag"))
	g.Expect(changed.ContentType).To(Equal("application/json"))
	g.Expect(changed.ID).To(Equal(uid + "/2/statechanged"))
	d := dataOf(t, changed)
	g.Expect(d.From.StatusCode).To(Equal("200"))
	g.Expect(d.To.StatusCode).To(Equal("503"))
	g.Expect(d.Cause).To(Equal("Fixed"))
	g.Expect(completed.ID).To(Equal(uid + "/2/flipcompleted"))
	f := dataOf(t, completed)
	g.Expect(f.Followers).To(Equal(int32(200)))
	after, err := time.ParseDuration(f.CompletedAfter)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(BeNumerically(">", 0))

	status := notifierStatus(t, notifier)
	g.Expect(status.Delivered).To(HaveLen(1))
	g.Expect(status.Delivered[0].Sequence).To(Equal(int64(2)))
	g.Expect(status.Delivered[0].Completed).To(Equal(int64(2)))
	g.Expect(status.LastDelivery.Type).To(Equal(v1beta1.NotificationFlipCompleted))
	g.Expect(status.SinkHost).To(Equal(sink.Listener.Addr().String()))
	eventually(t, notifierReady(notifier)).Should(Equal("True/Delivered"))
}

// stateUID is a state's UID.
func stateUID(t *testing.T, state *v1beta1.DynamicIngressState) string {
	t.Helper()
	got := &v1beta1.DynamicIngressState{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(state), got)).To(Succeed())
	return string(got.UID)
}

// TestNotifierRetriesInOrder: a sink that answers 503 for a while and then
// 200 receives every change once (ids deduplicated) and in order; the
// failed attempts are counted.
func TestNotifierRetriesInOrder(t *testing.T) {
	sink, state, notifier := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)

	sink.SetAnswer(func(int) int { return http.StatusServiceUnavailable })
	for _, code := range []string{"503", "500", "200"} {
		setFixedStatus(t, state, code)
		eventually(t, func() string { return stateCode(state) }).Should(Equal(code))
	}
	eventually(t, notifierReady(notifier)).Should(Equal("False/DeliveryFailing"))
	eventually(t, func() int { return len(sink.Requests()) }).Should(BeNumerically(">=", 3))
	sink.SetAnswer(nil)

	eventually(t, func() []string {
		var out []string
		for _, n := range sink.Received() {
			d := dataOf(t, n)
			out = append(out, fmt.Sprintf("%d %s", d.Sequence, d.To.StatusCode))
		}
		return out
	}).WithTimeout(time.Minute).Should(Equal([]string{"2 503", "3 500", "4 200"}))
	// The status is written after the turn's last delivery.
	eventually(t, func() int64 { return notifierStatus(t, notifier).Delivered[0].Sequence }).Should(Equal(int64(4)))
	NewWithT(t).Expect(notifierStatus(t, notifier).Failed).To(BeNumerically(">=", 3))
	eventually(t, notifierReady(notifier)).Should(Equal("True/Delivered"))
}

// stateCode is a state's status.statusCode.
func stateCode(state *v1beta1.DynamicIngressState) string {
	got := &v1beta1.DynamicIngressState{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), got); err != nil {
		return err.Error()
	}
	return got.Status.StatusCode
}

// TestNotifierClientErrorIsNotRetried: a sink that answers 400 gets the
// notification once; the notifier says so and goes on with the next.
func TestNotifierClientErrorIsNotRetried(t *testing.T) {
	sink, state, notifier := notifiedFlag(t, v1beta1.SinkFormatSlack)
	ns := state.Namespace

	sink.SetAnswer(func(int) int { return http.StatusBadRequest })
	setFixedStatus(t, state, "503")
	eventually(t, notifierReady(notifier)).Should(Equal("False/DeliveryFailing"))
	NewWithT(t).Consistently(func() int { return len(sink.Requests()) }, 3*time.Second).Should(Equal(1))
	NewWithT(t).Expect(sink.Requests()[0].Text).To(Equal(ns + "/flag: 200 → 503 (fixed)"))
	status := notifierStatus(t, notifier)
	NewWithT(t).Expect(status.Failed).To(Equal(int64(1)))
	NewWithT(t).Expect(status.LastDelivery.Result).To(Equal("HTTP 400"))
	c := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady)
	NewWithT(t).Expect(c.Message).To(ContainSubstring("refused by the sink, not sent again: HTTP 400"))

	sink.SetAnswer(nil)
	setFixedStatus(t, state, "200")
	eventually(t, func() []string {
		var out []string
		for _, n := range sink.Received() {
			out = append(out, n.Text)
		}
		return out
	}).Should(Equal([]string{ns + "/flag: 503 → 200 (fixed)"}))
	eventually(t, notifierReady(notifier)).Should(Equal("True/Delivered"))
}

// TestNotifierResendsWhatWasNotDelivered: what a notifier delivered is in
// its status, and only there: a manager that finds the status behind the
// state's history (a new leader after the old one sent but did not record
// it, or a restart while the sink was down) sends what follows, from the
// history.
func TestNotifierResendsWhatWasNotDelivered(t *testing.T) {
	sink, state, notifier := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)
	// Each change in the history before the next: an edit superseded
	// before its status was written leaves no entry (the status write is
	// conditional on the version read).
	setFixedStatus(t, state, "503")
	eventually(t, func() int { return len(sink.Received()) }).Should(Equal(1))
	setFixedStatus(t, state, "200")
	eventually(t, func() int { return len(sink.Received()) }).Should(Equal(2))

	// The record goes back to before both changes, as a leader that
	// crashed before writing it would have left it.
	got := &v1beta1.DynamicIngressNotifier{}
	NewWithT(t).Expect(k8s.Get(ctx, client.ObjectKeyFromObject(notifier), got)).To(Succeed())
	before := got.DeepCopy()
	got.Status.Delivered[0].Sequence = 1
	NewWithT(t).Expect(k8s.Status().Patch(ctx, got, client.MergeFrom(before))).To(Succeed())
	// A change of the state wakes the notifier; the two changes before it
	// are sent again, with the same ids, then the new one.
	setFixedStatus(t, state, "502")
	eventually(t, func() []string {
		var out []string
		for _, n := range sink.Requests() {
			out = append(out, fmt.Sprint(dataOf(t, n).Sequence))
		}
		return out
	}).Should(Equal([]string{"2", "3", "2", "3", "4"}))
	NewWithT(t).Expect(sink.Received()).To(HaveLen(3))
}

// TestNotifierStopsWhenNotAdmitted: a notifier of a cluster state sends
// its changes while the state admits the notifier's namespace; a change of
// the namespace's labels alone reaches it: withdrawn, it stops at once,
// saying so, and sends nothing of what changes meanwhile; admitted again,
// it is Ready again and resumes from the state's history.
func TestNotifierStopsWhenNotAdmitted(t *testing.T) {
	ns := newNamespace(t)
	sink := suite.NewSink(t)
	name := suite.NameOf(t)
	labelNamespace(t, ns, "notify", name)
	state := builders.FixedState("", name, "200", "").Cluster().FollowersMatching(map[string]string{"notify": name}).Obj()
	create(t, state)
	deleteAfter(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	notifier := builders.Notifier(ns, "oncall", sink.URL).ClusterState(name).Events(v1beta1.NotificationStateChanged).Obj()
	create(t, notifier)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Idle"))

	edit(t, state, func(s *v1beta1.ClusterDynamicIngressState) { s.Spec.FixedResponse.Status = "503" })
	eventually(t, sink.Received).Should(HaveLen(1))
	NewWithT(t).Expect(sink.Received()[0].Source).To(Equal("/clusterdynamicingressstates/" + name))

	// The label alone: no change of the state tells the notifier.
	labelNamespace(t, ns, "notify", "")
	eventually(t, notifierReady(notifier)).Should(Equal("False/StateNotAdmitted"))
	c := meta.FindStatusCondition(notifierStatus(t, notifier).Conditions, v1beta1.ConditionReady)
	NewWithT(t).Expect(c.Message).To(ContainSubstring(`does not admit namespace "` + ns + `"`))
	edit(t, state, func(s *v1beta1.ClusterDynamicIngressState) { s.Spec.FixedResponse.Status = "200" })
	NewWithT(t).Consistently(sink.Requests, 2*time.Second).Should(HaveLen(1))

	// Admitted again, by the label alone: the change made meanwhile, from
	// the history.
	labelNamespace(t, ns, "notify", name)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Delivered"))
	changes := func() []string {
		var out []string
		for _, n := range sink.Received() {
			_, change, _ := strings.Cut(n.ID, "/")
			out = append(out, change)
		}
		return out
	}
	eventually(t, changes).Should(Equal([]string{"2/statechanged", "3/statechanged"}))
}

// TestNotifierOverridden: a follower that gets and loses an override is
// told, with the user the override audit names; each switch's override is
// its own (one admitted earlier than another but stored later is sent);
// the audit of a switch being deleted is not read.
func TestNotifierOverridden(t *testing.T) {
	ns := newNamespace(t)
	sink := suite.NewSink(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	di := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "web")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	api := builders.DynamicIngress(ns, "api").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("api.example.com", "web")).Active(builders.IngressTo("api.example.com", "sorry")).Obj()
	create(t, state, di, api)
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	notifier := builders.Notifier(ns, "oncall", sink.URL).State("flag").Slack().Events(v1beta1.NotificationOverridden).Obj()
	create(t, notifier)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Idle"))

	// This suite runs no webhook: the test writes the audit as the
	// defaulting webhook would.
	at := time.Now().Add(time.Second).UTC().Format(v1beta1.OverrideAtFormat)
	edit(t, di, func(d *v1beta1.DynamicIngress) {
		d.Spec.Override = v1beta1.ModeActive
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "alice", v1beta1.OverrideAtAnnotation: at}
	})
	want := []string{"DynamicIngress " + ns + "/web: overridden to Active by alice at " + at}
	eventually(t, texts(sink)).Should(Equal(want))
	sent := notifierStatus(t, notifier).Overrides
	NewWithT(t).Expect(sent).To(HaveLen(1))
	NewWithT(t).Expect(sent[0].Switch).To(Equal("DynamicIngress/web"))
	NewWithT(t).Expect(sent[0].At.Time.Equal(mustParse(t, at))).To(BeTrue(), "overrides[0].at %s, want %s", sent[0].At, at)

	// api's override was admitted a second before web's (another replica
	// of the webhook) and is stored after it was sent.
	earlier := mustParse(t, at).Add(-time.Second).Format(v1beta1.OverrideAtFormat)
	edit(t, api, func(d *v1beta1.DynamicIngress) {
		d.Spec.Override = v1beta1.ModePassive
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "carol", v1beta1.OverrideAtAnnotation: earlier}
	})
	want = append(want, "DynamicIngress "+ns+"/api: overridden to Passive by carol at "+earlier)
	eventually(t, texts(sink)).Should(Equal(want))

	// Removed within the same second: told too.
	removed := mustParse(t, at).Add(200 * time.Millisecond).Format(v1beta1.OverrideAtFormat)
	edit(t, di, func(d *v1beta1.DynamicIngress) {
		d.Spec.Override = ""
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "bob", v1beta1.OverrideAtAnnotation: removed}
	})
	want = append(want, "DynamicIngress "+ns+"/web: override removed by bob at "+removed)
	eventually(t, texts(sink)).Should(Equal(want))

	// A switch held by a finalizer, deleted, then given a forged audit far
	// in the future (no webhook sees an object being deleted): nothing is
	// sent of it, and a later real override of another switch still is.
	forged := builders.DynamicIngress(ns, "forged").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("forged.example.com", "web")).Active(builders.IngressTo("forged.example.com", "sorry")).Obj()
	forged.Finalizers = []string{"example.com/hold"}
	create(t, forged)
	if err := k8s.Delete(ctx, forged); err != nil {
		t.Fatal(err)
	}
	edit(t, forged, func(d *v1beta1.DynamicIngress) {
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "mallory", v1beta1.OverrideAtAnnotation: "2099-01-01T00:00:00Z"}
	})
	t.Cleanup(func() { edit(t, forged, func(d *v1beta1.DynamicIngress) { d.Finalizers = nil }) })
	later := time.Now().Add(2 * time.Second).UTC().Format(v1beta1.OverrideAtFormat)
	edit(t, api, func(d *v1beta1.DynamicIngress) {
		d.Spec.Override = ""
		d.Annotations = map[string]string{v1beta1.OverrideByAnnotation: "dave", v1beta1.OverrideAtAnnotation: later}
	})
	want = append(want, "DynamicIngress "+ns+"/api: override removed by dave at "+later)
	eventually(t, texts(sink)).Should(Equal(want))
	NewWithT(t).Consistently(texts(sink), 2*time.Second).Should(Equal(want))
}

// texts are the Slack texts the sink received, in order.
func texts(sink *suite.Sink) func() []string {
	return func() []string {
		var out []string
		for _, n := range sink.Received() {
			out = append(out, n.Text)
		}
		return out
	}
}

func mustParse(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestNotifierWritesNothingInSteadyState: a notifier woken without
// anything to send (its state's labels edited) writes nothing.
func TestNotifierWritesNothingInSteadyState(t *testing.T) {
	sink, state, notifier := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)
	resourceVersion := func() string {
		got := &v1beta1.DynamicIngressNotifier{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(notifier), got); err != nil {
			return err.Error()
		}
		return got.ResourceVersion
	}
	before := resourceVersion()
	// Wakes a second apart: what the notifier records to the second
	// (its override mark) would differ between them.
	for i := range 3 {
		edit(t, state, func(s *v1beta1.DynamicIngressState) {
			s.Labels = map[string]string{"wake": fmt.Sprint(i)}
		})
		NewWithT(t).Consistently(resourceVersion, 1100*time.Millisecond).Should(Equal(before))
	}
	NewWithT(t).Expect(sink.Requests()).To(BeEmpty())
}

// TestNotifierBacksOffWhileTheSinkIsDown: a sink that is down is tried at
// the backoff's pace (1 s, 2 s, 4 s, ...), not at every change of the
// state, so that it gets everything soon after it comes back.
func TestNotifierBacksOffWhileTheSinkIsDown(t *testing.T) {
	sink, state, _ := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)

	sink.SetAnswer(func(int) int { return http.StatusServiceUnavailable })
	began := time.Now()
	codes := []string{"503", "500", "502", "504", "503", "200"}
	for _, code := range codes {
		setFixedStatus(t, state, code)
		eventually(t, func() string { return stateCode(state) }).Should(Equal(code))
		// Changes 0.7 s apart: each would wake the notifier.
		NewWithT(t).Consistently(sink.Received, 700*time.Millisecond).Should(BeEmpty())
	}
	// Attempts at 0 s, 1 s, 3 s, 7 s, ... after the first failure: a few,
	// however many changes came meanwhile.
	down := time.Since(began)
	if got, most := len(sink.Requests()), 2+int(math.Log2(down.Seconds()+1)); got > most {
		t.Errorf("%d attempts while the sink was down for %s with %d changes, want at most %d (the backoff's pace)", got, down, len(codes), most)
	}
	sink.SetAnswer(nil)
	back := time.Now()
	// The next attempt is due within the time it was down.
	eventually(t, func() int { return len(sink.Received()) }).WithTimeout(down + 5*time.Second).Should(Equal(len(codes)))
	t.Logf("the sink was down %s and got every change %s after it came back, after %d attempts", down, time.Since(back), len(sink.Requests()))
}

// TestNotifierSinkHeaderFromASecret: a sink header's value is read from a
// Secret of the notifier's namespace when the notification is sent; a
// Secret that is missing is said (SecretNotFound) and retried, and the
// notification goes out once it exists.
func TestNotifierSinkHeaderFromASecret(t *testing.T) {
	ns := newNamespace(t)
	sink := suite.NewSink(t)
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	create(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	notifier := builders.Notifier(ns, "oncall", sink.URL).State("flag").Events(v1beta1.NotificationStateChanged).
		SecretHeader("Authorization", "hook-token", "token").Obj()
	create(t, notifier)
	eventually(t, notifierReady(notifier)).Should(Equal("True/Idle"))

	setFixedStatus(t, state, "503")
	eventually(t, notifierReady(notifier)).Should(Equal("False/SecretNotFound"))
	NewWithT(t).Expect(sink.Requests()).To(BeEmpty())

	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook-token"},
		StringData: map[string]string{"token": "Bearer s3cr3t"}})
	eventually(t, func() []string {
		var out []string
		for _, n := range sink.Received() {
			out = append(out, n.Authorization)
		}
		return out
	}).WithTimeout(time.Minute).Should(Equal([]string{"Bearer s3cr3t"}))
	eventually(t, notifierReady(notifier)).Should(Equal("True/Delivered"))
}

// notifierTurnsNamespace belongs to a manager whose API requests a test
// counts; the suite's manager does not watch it.
const notifierTurnsNamespace = "notifier-turns"

// TestNotifierWaitingForItsTurnSendsNoRequest: two notifiers of one
// namespace, each with a sink that takes 3 s to answer, have a change to
// send: one sends while the other waits for the namespace's turn, and the
// one that waits asks nothing of the API server meanwhile (a notifier
// reads itself once it has its turn, not before).
func TestNotifierWaitingForItsTurnSendsNoRequest(t *testing.T) {
	var gets atomic.Int64
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/namespaces/"+notifierTurnsNamespace+"/dynamicingressnotifiers/") {
				gets.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	startManagerFor(t, notifierTurnsNamespace, cfg, nil)
	ns := notifierTurnsNamespace
	state := builders.FixedState(ns, "flag", "200", "").Obj()
	create(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	var sinks []*suite.Sink
	for _, name := range []string{"first", "second"} {
		sink := suite.NewSink(t)
		sink.SetAnswer(func(int) int { time.Sleep(3 * time.Second); return http.StatusOK })
		sinks = append(sinks, sink)
		create(t, builders.Notifier(ns, name, sink.URL).State("flag").Events(v1beta1.NotificationStateChanged).Obj())
	}
	for _, name := range []string{"first", "second"} {
		eventually(t, notifierReady(&v1beta1.DynamicIngressNotifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).Should(Equal("True/Idle"))
	}

	before := gets.Load()
	setFixedStatus(t, state, "503")
	for _, sink := range sinks {
		eventually(t, sink.Received).Should(HaveLen(1))
	}
	// Each notifier reads itself once per turn: one turn each to send,
	// perhaps one more each after its write. Waiting ~3 s at 25 ms a look
	// would have been a hundred more.
	if got := gets.Load() - before; got > 6 {
		t.Errorf("%d GETs of the notifiers while one waited 3s for the other's turn, want at most 6", got)
	}
}

// TestSlowSinksLeaveTheWorkersToOtherNamespaces: six namespaces'
// notifiers post to sinks that do not answer (more namespaces than the
// notifier has workers); another namespace's notifier still delivers its
// change at once, well before the slow posts time out (10 s), and all six
// wait for their answers together. Sending runs beside the workers, one
// sending turn per namespace.
func TestSlowSinksLeaveTheWorkersToOtherNamespaces(t *testing.T) {
	const slow = 6
	release := make(chan struct{})
	var hanging atomic.Int32
	fast, fastState, _ := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)
	var slowStates []*v1beta1.DynamicIngressState
	for range slow {
		sink, state, _ := notifiedFlag(t, v1beta1.SinkFormatCloudEvents, v1beta1.NotificationStateChanged)
		sink.SetAnswer(func(int) int { hanging.Add(1); <-release; return http.StatusOK })
		slowStates = append(slowStates, state)
	}
	// The sinks answer once the test ends (cleanups run last first).
	t.Cleanup(func() { close(release) })

	for _, state := range slowStates {
		setFixedStatus(t, state, "503")
	}
	eventually(t, hanging.Load).Should(BeNumerically(">=", 4))
	setFixedStatus(t, fastState, "503")
	eventually(t, fast.Received).WithTimeout(5 * time.Second).Should(HaveLen(1))
	eventually(t, hanging.Load).WithTimeout(5 * time.Second).Should(BeNumerically("==", slow))
}
