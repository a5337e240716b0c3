package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
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
