package controller_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// peakHeap samples the process's heap (the manager runs in it) until
// stop is called, and returns the largest it saw.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// TestAmplifyingBodyExpressionStopsOnlyItsState: a state whose
// bodyExpression nests maps over a 1 MiB answer (a result of a gigabyte,
// once) is ProbeFailed with reason expression, saying the result is too
// large; meanwhile the manager's heap stays small and another namespace's
// switch flips.
func TestAmplifyingBodyExpressionStopsOnlyItsState(t *testing.T) {
	noisy, quiet := newNamespace(t), newNamespace(t)
	body := strings.Repeat("x", 1<<20-16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	stop := peakHeap()
	var states []*v1beta1.DynamicIngressState
	for _, name := range []string{"nest-3", "nest-4", "nest-5"} {
		levels := int(name[len(name)-1] - '0')
		states = append(states, builders.ProbedState(noisy, name, srv.URL).Interval(time.Second).Timeout(time.Second).
			BodyExpression(builders.NestedMaps(levels, "response.body")).Obj())
	}
	for _, s := range states {
		create(t, s)
	}
	flag := builders.FixedState(quiet, "flag", "200", "").Obj()
	di := builders.DynamicIngress(quiet, "shop").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("shop.example.com", "shop")).Active(builders.IngressTo("shop.example.com", "sorry")).Obj()
	create(t, flag, di)
	eventually(t, backendOf(t, quiet, "shop")).Should(Equal("shop"))

	want := map[string]string{
		"nest-3": "GET " + srv.URL + ": bodyExpression failed: the result is too large: it is longer than 1048576 bytes or holds more than 16384 values",
		"nest-4": "GET " + srv.URL + ": bodyExpression failed: operation cancelled: actual cost limit exceeded",
		"nest-5": "GET " + srv.URL + ": bodyExpression failed: operation cancelled: actual cost limit exceeded",
	}
	for _, s := range states {
		eventually(t, conditionOf(s, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
		NewWithT(t).Expect(readyMessage(t, s)).To(Equal(want[s.Name]))
	}
	// The noisy states stay failed while the other namespace flips.
	setFixedStatus(t, flag, "503")
	eventually(t, backendOf(t, quiet, "shop")).Should(Equal("sorry"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
	for _, s := range states {
		NewWithT(t).Expect(conditionOf(s, v1beta1.ConditionReady)()).To(Equal("False/ProbeFailed"), s.Name)
	}
	// A 1 MiB answer read by an expression paces its state to a probe
	// every 16s (docs/behaviour.md): one failure so far.
	NewWithT(t).Expect(failuresByReason(t, noisy, "nest-3", "expression")).To(BeNumerically(">=", 1))
	peak := stop()
	t.Logf("peak heap of the test process with the manager in it: %d MiB", peak>>20)
	NewWithT(t).Expect(peak).To(BeNumerically("<", 512<<20), "peak heap")
}

// TestProbeHeaderFromSecret: a header's value comes from a Secret in the
// state's namespace, is sent to the endpoint, and a rotation is used once
// the manager's cache of it expires; a deleted Secret, or one without the
// key, is ProbeFailed with reason secret, naming the Secret and the key
// and never the value.
func TestProbeHeaderFromSecret(t *testing.T) {
	ns := newNamespace(t)
	var want atomic.Value
	want.Store("Bearer one")
	var seen atomic.Value
	seen.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != want.Load().(string) {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	t.Cleanup(srv.Close)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flags-token"},
		Data: map[string][]byte{"authorization": []byte("Bearer one")}}
	state := builders.ProbedState(ns, "flags", srv.URL).Interval(time.Second).Timeout(time.Second).
		HeaderFromSecret("Authorization", "flags-token", "authorization").Obj()
	create(t, secret, state)
	eventually(t, stateStatus(state)).Should(Equal(`200 ""`))
	NewWithT(t).Expect(seen.Load()).To(Equal("Bearer one"))

	// Rotation: the endpoint wants the new token at once; the manager
	// sends it within its cache time of the Secret.
	want.Store("Bearer two")
	rotated := time.Now()
	edit(t, secret, func(s *corev1.Secret) { s.Data["authorization"] = []byte("Bearer two") })
	NewWithT(t).Eventually(func() string { return seen.Load().(string) }, secretRotationWindow+5*time.Second, 100*time.Millisecond).
		Should(Equal("Bearer two"))
	took := time.Since(rotated)
	t.Logf("the rotated token was sent %v after the edit (rotation window %v, probe interval 1s)", took.Round(100*time.Millisecond), secretRotationWindow)
	// Within the window, give or take a probe and its round trip.
	NewWithT(t).Expect(took).To(BeNumerically("<", secretRotationWindow+2*time.Second))
	eventually(t, stateStatus(state)).Should(Equal(`200 ""`))

	// The key is gone, then the Secret.
	edit(t, secret, func(s *corev1.Secret) { s.Data = map[string][]byte{"other": []byte("Bearer two")} })
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	NewWithT(t).Expect(readyMessage(t, state)).To(Equal("GET " + srv.URL + `: header "Authorization" reads key "authorization" of Secret ` +
		ns + "/flags-token: the Secret has no such key"))
	if err := k8s.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string { _ = conditionOf(state, v1beta1.ConditionReady)(); return readyMessage(t, state) }).Should(Equal(
		"GET " + srv.URL + `: header "Authorization" reads key "authorization" of Secret ` + ns + "/flags-token: the Secret does not exist"))
	NewWithT(t).Expect(state.Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("Bearer"))))
	NewWithT(t).Expect(failuresByReason(t, ns, "flags", "secret")).To(BeNumerically(">=", 1))
}
