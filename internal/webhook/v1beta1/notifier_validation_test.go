package v1beta1

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestValidateNotifier: a notifier is refused at the field at fault: its
// states (1 to 32, each once), its event types, and its sink (an http or
// https URL the address guard admits, valid headers).
func TestValidateNotifier(t *testing.T) {
	// The metadata address is allowed, to show that the deny list holds
	// even so.
	guard, err := probe.ParseGuard(probe.DefaultDenyCIDRs, "*.example.com,169.254.169.254")
	if err != nil {
		t.Fatal(err)
	}
	notifier := func() *builders.NotifierWrapper {
		return builders.Notifier("shop", "oncall", "https://hooks.example.com/services/T0/B0").State("killswitch").ClusterState("global")
	}
	tooMany := notifier()
	for i := range 31 {
		tooMany.State(fmt.Sprintf("more-%d", i))
	}
	tests := []struct {
		name string
		n    *builders.NotifierWrapper
		want []string
	}{
		{"valid", notifier(), nil},
		{"valid, Slack, every event named, a token from a Secret",
			notifier().Slack().Events(v1beta1.NotificationTypes...).SecretHeader("Authorization", "hook-token", "token"), nil},
		{"no state", builders.Notifier("shop", "oncall", "https://hooks.example.com/"),
			[]string{"spec.states: Required value: name at least one state"}},
		{"33 states", tooMany, []string{"spec.states: Too many: 33: must have at most 32 items"}},
		{"a state twice", notifier().State("killswitch"),
			[]string{`spec.states[2]: Duplicate value: "DynamicIngressState killswitch"`}},
		{"an unknown event type", notifier().Events("StateChanged", "Flipped"),
			[]string{`spec.events[1]: Unsupported value: "Flipped": supported values: "StateChanged", "FlipCompleted", "FlipStalled", "ProbeFailed", "Overridden", "OverrideExpired"`}},
		{"a sink that is not http", builders.Notifier("shop", "oncall", "smtp://mail.example.com/").State("killswitch"),
			[]string{`spec.sink.url: Invalid value: "smtp://mail.example.com/": must be an absolute http or https URL with a host`}},
		{"a sink the guard denies", builders.Notifier("shop", "oncall", "http://169.254.169.254/").State("killswitch"),
			[]string{`spec.sink.url: Invalid value: "http://169.254.169.254/": address 169.254.169.254 is inside denied range 169.254.0.0/16 (the manager's --probe-deny-cidrs)`}},
		{"a sink outside the allow list", builders.Notifier("shop", "oncall", "https://hooks.slack.com/services/x").State("killswitch"),
			[]string{`spec.sink.url: Invalid value: "https://hooks.slack.com/services/x": host hooks.slack.com is not in the allowed hosts (the manager's --probe-allow-hosts)`}},
		{"a header with a colon in its name", notifier().Header("Authorization: Bearer", "x"),
			[]string{"spec.sink.headers[0].name: Invalid value: must be the header name alone, without a colon (what follows it goes in value); the name is not shown, it may hold a secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateDynamicIngressNotifier(tt.n.Obj(), guard) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNotifierWarnings: a literal credential in a sink header is warned
// about, as in a probe's.
func TestNotifierWarnings(t *testing.T) {
	n := builders.Notifier("shop", "oncall", "https://hooks.example.com/").State("killswitch").Header("Authorization", "Bearer s3cr3t").Obj()
	want := []string{`spec.sink.headers[0].value: header "Authorization" has a literal value that anyone who can read this DynamicIngressNotifier can read; put it in a Secret and use valueFrom.secretKeyRef`}
	if diff := cmp.Diff(want, []string(notifierWarnings(n))); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestDefaultNotifier: CloudEvents, every event type and each state's kind
// are written out.
func TestDefaultNotifier(t *testing.T) {
	n := builders.Notifier("shop", "oncall", "https://hooks.example.com/").Obj()
	n.Spec.States = []v1beta1.StateReference{{Name: "killswitch"}}
	DefaultDynamicIngressNotifier(n)
	if n.Spec.Sink.Format != v1beta1.SinkFormatCloudEvents || len(n.Spec.Events) != 6 || n.Spec.States[0].Kind != v1beta1.StateKindNamespaced {
		t.Errorf("defaulted spec = %+v", n.Spec)
	}
}
