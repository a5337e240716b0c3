package controller_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestSwitchAnnouncedOnce flips one state driving 50 DynamicIngresses four
// times in quick succession: each transition is one Switched event and one
// status write per DynamicIngress, however the watch events interleave.
func TestSwitchAnnouncedOnce(t *testing.T) {
	const n, flips = 50, 4
	ns := newNamespace(t)
	// Every transition's message differs (the status code is in it), so
	// the event recorder never folds two into one series.
	state := builders.FixedState(ns, "flag", "200", `{"on":false}`).Obj()
	create(t, state)
	var dis []*v1beta1.DynamicIngress
	for i := range n {
		name := fmt.Sprintf("site-%d", i)
		di := builders.DynamicIngress(ns, name).State("flag").
			Passive(builders.IngressTo(name+".example.com", "web").Label("app", "web")).
			Active(builders.IngressTo(name+".example.com", "sorry").Label("app", "sorry")).Obj()
		di.Spec.Expected = v1beta1.ExpectedResponse{Body: ptr.To(`{"on":true}`)}
		dis = append(dis, di)
		create(t, di)
	}
	for _, di := range dis {
		eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	}

	statusWrites := writesTo(ns, "dynamicingresses/status")
	for flip := 1; flip <= flips; flip++ {
		active := flip%2 == 1
		patchFixed(t, state, func(f *v1beta1.FixedResponse) {
			f.Status = fmt.Sprint(200 + flip)
			f.Body = fmt.Sprintf(`{"on":%t}`, active)
		})
		want, backend := "False", "web"
		if active {
			want, backend = "True", "sorry"
		}
		for _, di := range dis {
			eventually(t, func() string { return strings.Split(conditionOf(di, v1beta1.ConditionActive)(), "/")[0] }).Should(Equal(want))
			eventually(t, backendOf(t, ns, di.Spec.Target.Name)).Should(Equal(backend))
		}
	}

	// Events are sent asynchronously: wait for all of them, then make sure
	// no more come.
	eventually(t, switchedEvents(ns)).Should(HaveLen(n))
	for name, count := range switchedEvents(ns)() {
		if count != flips {
			t.Errorf("DynamicIngress %s: %d Switched events for %d transitions", name, count, flips)
		}
	}
	NewWithT(t).Consistently(func() int { return sumCounts(switchedEvents(ns)()) }, 2*time.Second, 200*time.Millisecond).Should(Equal(n * flips))
	if got := writesTo(ns, "dynamicingresses/status") - statusWrites; got > n*flips {
		t.Errorf("%d status writes for %d transitions: a switch was written more than once", got, n*flips)
	}
}

// switchedEvents counts the Switched events of each DynamicIngress of ns.
// An event the recorder repeated shows as a series of two or more.
func switchedEvents(ns string) func() map[string]int {
	return func() map[string]int {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return map[string]int{"list: " + err.Error(): 0}
		}
		out := map[string]int{}
		for _, e := range list.Items {
			if e.Reason != v1beta1.EventReasonSwitched {
				continue
			}
			count := 1
			if e.Series != nil {
				count = int(e.Series.Count)
			}
			out[e.Regarding.Name] += count
		}
		return out
	}
}

func sumCounts(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}

// TestFailingProbesWriteOnce: states whose endpoints fail the same way at
// every probe (connection reset, timeout, an untrusted certificate) write
// their status once, when the failure starts, and then nothing.
func TestFailingProbesWriteOnce(t *testing.T) {
	ns := newNamespace(t)
	endpoints := map[string]string{
		"reset":   startResettingServer(t),
		"hang":    startHangingServer(t),
		"tls":     startUntrustedTLSServer(t),
		"refused": closedPortURL(t),
	}
	var states []*v1beta1.DynamicIngressState
	for i := range 20 {
		kind := []string{"reset", "hang", "tls", "refused"}[i%4]
		// Tokens in the query string and in userinfo are never shown.
		url := strings.Replace(endpoints[kind], "://", "://user:pa55word@", 1) + "/flags?token=s3cr3t"
		state := builders.ProbedState(ns, fmt.Sprintf("%s-%d", kind, i), url).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(1).Obj()
		// Long enough that a loaded machine does not turn a TLS or reset
		// failure into a timeout now and then: that would be a real change.
		state.Spec.Probe.Timeout = &metav1.Duration{Duration: 900 * time.Millisecond}
		states = append(states, state)
		create(t, state)
	}
	for _, s := range states {
		eventually(t, conditionOf(s, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	}
	eventually(t, func() int { return len(eventReasonsIn(ns, v1beta1.ReasonProbeFailed)) }).Should(Equal(len(states)))

	messages := func() map[string]string {
		out := map[string]string{}
		for _, s := range states {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				t.Fatal(err)
			}
			out[s.Name] = meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady).Message
		}
		return out
	}
	before := writesTo(ns, "dynamicingressstates/status") + writesTo(ns, "events")
	messagesBefore := messages()
	time.Sleep(5 * time.Second) // five probe intervals
	if got := writesTo(ns, "dynamicingressstates/status") + writesTo(ns, "events") - before; got != 0 {
		t.Errorf("%d writes in five intervals of unchanged failures, want 0; changed: %s", got, diffMaps(messagesBefore, messages()))
	}

	for _, s := range states {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			t.Fatal(err)
		}
		msg := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady).Message
		for _, secret := range []string{"s3cr3t", "pa55word", "token"} {
			if strings.Contains(msg, secret) {
				t.Errorf("state %s: the condition message shows %q: %s", s.Name, secret, msg)
			}
		}
	}
	for _, note := range eventReasonsIn(ns, v1beta1.ReasonProbeFailed) {
		if strings.Contains(note, "s3cr3t") || strings.Contains(note, "pa55word") {
			t.Errorf("a ProbeFailed event shows the URL's secrets: %s", note)
		}
	}
}

// eventReasonsIn returns the notes of the events of ns with this reason.
func eventReasonsIn(ns, reason string) []string {
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		return []string{"list: " + err.Error()}
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// startResettingServer accepts connections, reads the request and resets
// the connection.
func startResettingServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				_ = conn.SetReadDeadline(time.Now().Add(time.Second))
				_, _ = conn.Read(buf)
				_ = conn.(*net.TCPConn).SetLinger(0)
				_ = conn.Close()
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// startHangingServer accepts connections and never answers.
func startHangingServer(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stop }))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// startUntrustedTLSServer serves HTTPS with a certificate the prober does
// not trust.
func startUntrustedTLSServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // every probe is a failed handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedPortURL is a loopback URL where nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}
