package endpoints

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestReadyConditions: an endpoint counts when conditions.ready is true or
// unset and conditions.terminating is not true; conditions.serving never
// matters.
func TestReadyConditions(t *testing.T) {
	tests := []struct {
		name               string
		ready, terminating *bool
		want               int
	}{
		{"ready, not terminating", ptr.To(true), ptr.To(false), 1},
		{"ready, terminating unset", ptr.To(true), nil, 1},
		{"ready, terminating", ptr.To(true), ptr.To(true), 0},
		{"not ready, not terminating", ptr.To(false), ptr.To(false), 0},
		{"not ready, terminating unset", ptr.To(false), nil, 0},
		{"not ready, terminating", ptr.To(false), ptr.To(true), 0},
		{"ready unset, not terminating", nil, ptr.To(false), 1},
		{"ready unset, terminating unset", nil, nil, 1},
		{"ready unset, terminating", nil, ptr.To(true), 0},
	}
	servings := []struct {
		name    string
		serving *bool
	}{{"serving", ptr.To(true)}, {"not serving", ptr.To(false)}, {"serving unset", nil}}
	for _, tt := range tests {
		for _, s := range servings {
			t.Run(tt.name+", "+s.name, func(t *testing.T) {
				es := builders.EndpointSlice("ns", "web-abc", "web").Endpoint("10.0.0.1", tt.ready, tt.terminating).Obj()
				es.Endpoints[0].Conditions.Serving = s.serving
				if diff := cmp.Diff(tt.want, Ready([]discoveryv1.EndpointSlice{*es})); diff != "" {
					t.Errorf("Ready (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestReady: the count over a Service's slices: an address counts once
// however often it appears, an endpoint is its first address, endpoints
// without an address do not count, and the address families of a
// dual-stack Service are not summed (the largest is taken).
func TestReady(t *testing.T) {
	slice := func(name string) *builders.SliceWrapper { return builders.EndpointSlice("ns", name, "web") }
	withAddresses := func(w *builders.SliceWrapper, addresses ...string) *builders.SliceWrapper {
		w.Endpoints = append(w.Endpoints, discoveryv1.Endpoint{Addresses: addresses, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		return w
	}
	tests := []struct {
		name   string
		slices []*builders.SliceWrapper
		want   int
	}{
		{name: "no slices", want: 0},
		{name: "a slice without endpoints", slices: []*builders.SliceWrapper{slice("a")}, want: 0},
		{name: "ready and not ready", slices: []*builders.SliceWrapper{
			slice("a").Ready("10.0.0.1", "10.0.0.2").NotReady("10.0.0.3"),
		}, want: 2},
		{name: "an address twice in one slice", slices: []*builders.SliceWrapper{
			slice("a").Ready("10.0.0.1", "10.0.0.1", "10.0.0.2"),
		}, want: 2},
		{name: "an address in two slices", slices: []*builders.SliceWrapper{
			slice("a").Ready("10.0.0.1", "10.0.0.2"),
			slice("b").Ready("10.0.0.2", "10.0.0.3"),
		}, want: 3},
		{name: "an address ready in one slice, not ready in another", slices: []*builders.SliceWrapper{
			slice("a").Ready("10.0.0.1"),
			slice("b").NotReady("10.0.0.1"),
		}, want: 1},
		{name: "endpoints without addresses", slices: []*builders.SliceWrapper{
			withAddresses(withAddresses(slice("a")), "10.0.0.1"),
		}, want: 1},
		{name: "an endpoint's first address counts, not its others", slices: []*builders.SliceWrapper{
			// Two endpoints whose first address is the same are one.
			withAddresses(withAddresses(slice("a"), "10.0.0.1", "10.0.0.2"), "10.0.0.1", "10.0.0.3"),
		}, want: 1},
		{name: "an endpoint's second address is not another endpoint's first", slices: []*builders.SliceWrapper{
			withAddresses(withAddresses(slice("a"), "10.0.0.1", "10.0.0.2"), "10.0.0.2"),
		}, want: 2},
		{name: "slices of one Service with differing counts", slices: []*builders.SliceWrapper{
			slice("a").Ready("10.0.0.1", "10.0.0.2", "10.0.0.3"),
			slice("b").Ready("10.0.1.1").NotReady("10.0.1.2", "10.0.1.3"),
			slice("c").NotReady("10.0.2.1"),
			slice("d"),
		}, want: 4},
		{name: "dual stack, the same pods in both families", slices: []*builders.SliceWrapper{
			slice("v4").Ready("10.0.0.1", "10.0.0.2", "10.0.0.3"),
			slice("v6").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1", "fd00::2", "fd00::3"),
		}, want: 3},
		{name: "dual stack, IPv6 behind", slices: []*builders.SliceWrapper{
			slice("v4").Ready("10.0.0.1", "10.0.0.2", "10.0.0.3"),
			slice("v6").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1").NotReady("fd00::2", "fd00::3"),
		}, want: 3},
		{name: "dual stack, IPv4 behind, IPv6 listed last", slices: []*builders.SliceWrapper{
			slice("v4").Ready("10.0.0.1"),
			slice("v6").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1", "fd00::2"),
		}, want: 2},
		{name: "dual stack, IPv6 listed first and ahead", slices: []*builders.SliceWrapper{
			slice("v6").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1", "fd00::2"),
			slice("v4").Ready("10.0.0.1"),
		}, want: 2},
		{name: "dual stack over several slices per family", slices: []*builders.SliceWrapper{
			slice("v4-a").Ready("10.0.0.1", "10.0.0.2"),
			slice("v6-a").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1"),
			slice("v4-b").Ready("10.0.0.2", "10.0.0.3"),
			slice("v6-b").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::2"),
		}, want: 3},
		{name: "families are counted apart, even where their texts meet", slices: []*builders.SliceWrapper{
			// One set for both would count a, b and c: 3; a sum 4.
			slice("v4").Ready("a", "b"),
			slice("fqdn").AddressType(discoveryv1.AddressTypeFQDN).Ready("a", "c"),
		}, want: 2},
		{name: "FQDN", slices: []*builders.SliceWrapper{
			slice("a").AddressType(discoveryv1.AddressTypeFQDN).Ready("web-0.example.com", "web-1.example.com").NotReady("web-2.example.com"),
			slice("b").AddressType(discoveryv1.AddressTypeFQDN).Ready("web-1.example.com"),
		}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var slices []discoveryv1.EndpointSlice
			for _, w := range tt.slices {
				slices = append(slices, *w.Obj())
			}
			if diff := cmp.Diff(tt.want, Ready(slices)); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProject: a projection keeps the slice's name and address type and
// one hash per ready endpoint, in a backing array exactly as long as needed
// (it is what the tracker keeps), and nothing when no endpoint is ready.
func TestProject(t *testing.T) {
	tests := []struct {
		name      string
		slice     *discoveryv1.EndpointSlice
		wantName  string
		wantKind  addressType
		wantReady int
	}{
		{"IPv4", builders.EndpointSlice("ns", "web-a", "web").Ready("10.0.0.1", "10.0.0.2", "10.0.0.3").NotReady("10.0.0.4").Obj(), "web-a", addressIPv4, 3},
		{"IPv6", builders.EndpointSlice("ns", "web-b", "web").AddressType(discoveryv1.AddressTypeIPv6).Ready("fd00::1").Obj(), "web-b", addressIPv6, 1},
		{"FQDN", builders.EndpointSlice("ns", "web-c", "web").AddressType(discoveryv1.AddressTypeFQDN).Ready("a.example.com").Obj(), "web-c", addressFQDN, 1},
		{"unknown type", builders.EndpointSlice("ns", "web-d", "web").AddressType("Other").Ready("x").Obj(), "web-d", addressOther, 1},
		{"none ready", builders.EndpointSlice("ns", "web-e", "web").NotReady("10.0.0.1").Obj(), "web-e", addressIPv4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := project(tt.slice)
			got := fmt.Sprintf("name %s, kind %d, %d ready, capacity %d, nil %t", p.name, p.kind, len(p.ready), cap(p.ready), p.ready == nil)
			want := fmt.Sprintf("name %s, kind %d, %d ready, capacity %d, nil %t", tt.wantName, tt.wantKind, tt.wantReady, tt.wantReady, tt.wantReady == 0)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("project (-want +got):\n%s", diff)
			}
		})
	}
}
