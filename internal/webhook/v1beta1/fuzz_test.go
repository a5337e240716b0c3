package v1beta1

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// FuzzValidateDynamicIngressState holds the state validator to a decision
// for any input: no panic, the same answer twice, errors that name a field,
// and nothing accepted that the prober could not run.
func FuzzValidateDynamicIngressState(f *testing.F) {
	f.Add(false, "200", "https://flags.example.com/x", "GET", int64(30e9), int64(5e9), int32(3), "Accept", "application/json")
	f.Add(true, "503", "", "", int64(0), int64(0), int32(0), "", "")
	f.Add(false, "", "http://127.0.0.1:8080/", "POST", int64(1e9), int64(1e9), int32(1), "X Bad", "v\n")
	f.Add(false, "", "http://[::ffff:169.254.169.254]/", "HEAD", int64(86400e9), int64(-1), int32(-5), "", "")
	f.Add(false, "", "ftp://x", "DELETE", int64(-1), int64(0), int32(1), "", "")
	f.Add(false, "", "http://%zz", "GET", int64(1e9), int64(2e9), int32(1), "", "")
	guard, _ := probe.ParseGuard(probe.DefaultDenyCIDRs, "")
	f.Fuzz(func(t *testing.T, fixed bool, code, rawURL, method string, interval, timeout int64, threshold int32, hName, hValue string) {
		state := &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
		if fixed {
			state.Spec.FixedResponse = &v1beta1.FixedResponse{Status: code}
		}
		if rawURL != "" || !fixed {
			state.Spec.Probe = &v1beta1.HTTPProbe{Type: v1beta1.ProbeTypeHTTP, Method: method, URL: rawURL,
				Interval: &metav1.Duration{Duration: time.Duration(interval)}, Timeout: &metav1.Duration{Duration: time.Duration(timeout)},
				FailureThreshold: &threshold}
			if hName != "" {
				state.Spec.Probe.Headers = []v1beta1.HTTPHeader{{Name: hName, Value: hValue}}
			}
		}
		errs := ValidateDynamicIngressState(state, guard)
		checkDecision(t, errs, ValidateDynamicIngressState(state, guard))
		if len(errs) > 0 || state.Spec.Probe == nil {
			return
		}
		p := state.Spec.Probe
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Errorf("accepted a probe URL the prober cannot use: %q", p.URL)
		}
		if guard.CheckHost(u.Hostname()) != nil {
			t.Errorf("accepted a denied literal address: %q", p.URL)
		}
		if p.TimeoutOrDefault() <= 0 || p.TimeoutOrDefault() > p.IntervalOrDefault() || p.IntervalOrDefault() < time.Second || p.FailureThresholdOrDefault() < 1 {
			t.Errorf("accepted timing the scheduler cannot run: %+v", p)
		}
	})
}

// FuzzValidateDynamicIngress does the same for DynamicIngresses, old and new.
func FuzzValidateDynamicIngress(f *testing.F) {
	f.Add("shop", "storefront", "shop", "killswitch", "200", "", true, false, "storefront")
	f.Add("shop", "", "other", "", "", "body", false, false, "x")
	f.Add("shop", "Bad_Name", "", "s", "99", "", true, true, "Bad_Name")
	f.Add("", "a.b.c", "", "a", "599", "{}", false, true, "a.b")
	f.Fuzz(func(t *testing.T, ns, target, targetNS, state, code, body string, passive, active bool, oldTarget string) {
		di := &v1beta1.DynamicIngress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"},
			Spec: v1beta1.DynamicIngressSpec{
				Target:   v1beta1.TargetReference{Name: target, Namespace: targetNS},
				State:    state,
				Expected: v1beta1.ExpectedResponse{StatusCode: code},
			},
		}
		if body != "" {
			di.Spec.Expected.Body = &body
		}
		if passive {
			di.Spec.PassiveIngress = &v1beta1.IngressVariant{}
		}
		if active {
			di.Spec.ActiveIngress = &v1beta1.IngressVariant{}
		}
		old := di.DeepCopy()
		old.Spec.Target.Name = oldTarget
		for _, prev := range []*v1beta1.DynamicIngress{nil, old} {
			errs := ValidateDynamicIngress(prev, di, probe.Guard{})
			checkDecision(t, errs, ValidateDynamicIngress(prev, di, probe.Guard{}))
			if len(errs) == 0 {
				if targetNS != "" && targetNS != ns {
					t.Errorf("accepted a target in namespace %q for a DynamicIngress in %q", targetNS, ns)
				}
				if prev != nil && prev.Spec.Target.Name != target {
					t.Errorf("accepted a target change %q -> %q", prev.Spec.Target.Name, target)
				}
				if !passive && !active {
					t.Error("accepted a DynamicIngress with no template")
				}
			}
		}
	})
}

func checkDecision(t *testing.T, errs, again field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(errs, again); diff != "" {
		t.Errorf("two calls disagree (-first +second):\n%s", diff)
	}
	for _, e := range errs {
		if e == nil || e.Field == "" || e.Type == "" {
			t.Errorf("an error without a field or type: %#v", e)
		}
	}
}
