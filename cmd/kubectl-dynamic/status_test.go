package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestStatusTableServed: status prints SERVED per switch: true, false or
// checking for a switch with spec.served, - without it.
func TestStatusTableServed(t *testing.T) {
	var out bytes.Buffer
	o := &options{streams: genericiooptions.IOStreams{Out: &out}}
	report := plugin.Report{
		State: plugin.StateReport{Name: "flag", Namespace: "shop", StatusCode: "503", Reason: "Fixed"},
		Switches: []plugin.SwitchReport{
			{Kind: "DynamicIngress", Name: "web", Target: "shop/web", Mode: "active", InShape: true, Override: "none", Served: plugin.ServedTrue},
			{Kind: "DynamicIngress", Name: "blog", Target: "shop/blog", Mode: "active", InShape: true, Override: "none"},
			{Kind: "DynamicHTTPRoute", Name: "api", Target: "shop/api", Mode: "active", InShape: true, Override: "none", Accepted: plugin.AcceptedTrue, Served: plugin.ServedChecking},
			{Kind: "DynamicHTTPRoute", Name: "docs", Target: "shop/docs", Mode: "active", InShape: true, Override: "none", Accepted: plugin.AcceptedTrue, Served: plugin.ServedFalse},
		},
		Summary: plugin.Summary{Total: 4, Active: 4},
	}
	if err := printStatus(o, report); err != nil {
		t.Fatal(err)
	}
	want := `State shop/flag: HTTP 503, Fixed
KIND               NAME   TARGET      MODE     IN SHAPE   OVERRIDE   ACCEPTED   SERVED
DynamicIngress     web    shop/web    active   yes        none       -          true
DynamicIngress     blog   shop/blog   active   yes        none       -          -
DynamicHTTPRoute   api    shop/api    active   yes        none       true       checking
DynamicHTTPRoute   docs   shop/docs   active   yes        none       true       false
4 switches: 4 active, 0 passive, 0 not yet in shape
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStatusServiceState: for a state that follows a Service, status
// prints the Service's lines under the state's line, and the note of a
// count it could not make at the end.
func TestStatusServiceState(t *testing.T) {
	answered := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	read := answered.Add(4*time.Minute + 10*time.Second)
	state := builders.ServiceState("shop", "storefront-up", "storefront").Obj()
	state.Status, _ = decision.ServiceStatus(state, decision.ServiceCount{Exists: true, Ready: 3}, answered, answered)
	web := plugin.SwitchReport{Kind: "DynamicIngress", Name: "web", Target: "shop/web", Mode: "passive", InShape: true, Override: "none"}
	tests := []struct {
		name  string
		count plugin.ServiceCount
		notes []string
		want  string
	}{
		{"counted now, below minReady", plugin.ServiceCount{Ready: 0, Listed: true, Known: true}, nil, `State shop/storefront-up: HTTP 200, EndpointsCounted
Service shop/storefront: 0 ready endpoints, minReady 1 (unavailableAfter 10s, availableAfter 30s)
The count is below minReady now: the answer turns 503 once it stays there for 10s (unavailableAfter); 200 since 2026-12-02T09:00:00Z (4m10s)
KIND             NAME   TARGET     MODE      IN SHAPE   OVERRIDE   ACCEPTED   SERVED
DynamicIngress   web    shop/web   passive   yes        none       -          -
1 switch: 0 active, 1 passive, 0 not yet in shape
`},
		{"the Ready condition's count", plugin.ServiceCount{Ready: 3, Known: true}, []string{"the ready count of Service shop/storefront is the one ..."}, `State shop/storefront-up: HTTP 200, EndpointsCounted
Service shop/storefront: 3 ready endpoints when the answer last changed, minReady 1 (unavailableAfter 10s, availableAfter 30s)
The count is at or above minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 200
KIND             NAME   TARGET     MODE      IN SHAPE   OVERRIDE   ACCEPTED   SERVED
DynamicIngress   web    shop/web   passive   yes        none       -          -
1 switch: 0 active, 1 passive, 0 not yet in shape
Note: the ready count of Service shop/storefront is the one ...
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			report := plugin.Report{
				State:    plugin.StateReport{Name: "storefront-up", Namespace: "shop", StatusCode: "200", Reason: "EndpointsCounted", Service: plugin.ServiceOf(state, tt.count, read)},
				Switches: []plugin.SwitchReport{web},
				Summary:  plugin.Summary{Total: 1, Passive: 1},
				Notes:    tt.notes,
			}
			if err := printStatus(&options{streams: genericiooptions.IOStreams{Out: &out}}, report); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusTablePins: OVERRIDE shows a pin's mode, and its phase once it
// ended; a line per pinned switch under the table says who pinned it,
// until when (how long is left, or since when it ended) and why.
func TestStatusTablePins(t *testing.T) {
	var out bytes.Buffer
	report := plugin.Report{
		State: plugin.StateReport{Name: "killswitch", Namespace: "demo", StatusCode: "200", Reason: "Fixed"},
		Switches: []plugin.SwitchReport{
			{Kind: "DynamicIngress", Name: "storefront", Target: "demo/storefront", Mode: "active", InShape: true, Override: "active",
				Pin: &plugin.PinReport{Mode: v1beta1.ModeActive, By: "alice", Until: ptr.To("2026-12-02T03:00:00Z"), Reason: "INC-1234", Phase: v1beta1.OverridePhaseInEffect, Left: "1h59m"}},
			{Kind: "DynamicIngress", Name: "blog", Target: "demo/blog", Mode: "passive", InShape: false, Override: "active",
				Pin: &plugin.PinReport{Mode: v1beta1.ModeActive, By: "alice", Until: ptr.To("2026-12-02T00:55:00Z"), Reason: "INC-1200", Phase: v1beta1.OverridePhaseExpired, Ago: "5m"}},
			{Kind: "DynamicHTTPRoute", Name: "partner-api", Target: "demo/partner-api", Mode: "passive", InShape: true, Override: "passive", Accepted: plugin.AcceptedTrue,
				Pin: &plugin.PinReport{Mode: v1beta1.ModePassive, By: "bob", Phase: v1beta1.OverridePhaseInEffect}},
			{Kind: "DynamicIngress", Name: "checkout", Target: "demo/checkout", Mode: "passive", InShape: true, Override: "none"},
		},
		Summary: plugin.Summary{Total: 4, Active: 1, Passive: 3, NotInShape: 1},
	}
	if err := printStatus(&options{streams: genericiooptions.IOStreams{Out: &out}}, report); err != nil {
		t.Fatal(err)
	}
	want := `State demo/killswitch: HTTP 200, Fixed
KIND               NAME          TARGET             MODE      IN SHAPE   OVERRIDE           ACCEPTED   SERVED
DynamicIngress     storefront    demo/storefront    active    yes        active             -          -
DynamicIngress     blog          demo/blog          passive   no         active (expired)   -          -
DynamicHTTPRoute   partner-api   demo/partner-api   passive   yes        passive            true       -
DynamicIngress     checkout      demo/checkout      passive   yes        none               -          -
Switches pinned by spec.override:
  DynamicIngress "storefront": active pinned by alice until 2026-12-02T03:00:00Z (in 1h59m): INC-1234
  DynamicIngress "blog": active pinned by alice ended at 2026-12-02T00:55:00Z (expired 5m ago): INC-1200
  DynamicHTTPRoute "partner-api": passive pinned by bob with no end
4 switches: 1 active, 3 passive, 1 not yet in shape
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
