// Package endpoints counts the ready endpoints of Services from their
// EndpointSlices, for states that follow a Service (docs/behaviour.md,
// "A state that follows a Service"). It keeps of each EndpointSlice only
// what the count needs, a few bytes per ready address, so that a cluster's
// slices of Services no state follows cost the manager little. It imports
// no reconciler.
package endpoints

import (
	"hash/fnv"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// addressType is an EndpointSlice's address type in one byte.
type addressType uint8

const (
	addressIPv4 addressType = iota
	addressIPv6
	addressFQDN
	addressOther
)

func addressTypeOf(t discoveryv1.AddressType) addressType {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return addressIPv4
	case discoveryv1.AddressTypeIPv6:
		return addressIPv6
	case discoveryv1.AddressTypeFQDN:
		return addressFQDN
	}
	return addressOther
}

// slice is what the count keeps of one EndpointSlice: its name, its
// address type, and a 64-bit hash of the first address of each ready
// endpoint. Two addresses of one Service that hash alike would count once;
// with 64 bits that takes billions of addresses to become likely.
type slice struct {
	name  string
	kind  addressType
	ready []uint64
}

// counts reports whether an endpoint counts as ready: conditions.ready true
// or unset (unknown counts as ready, as kube-proxy reads it), and
// conditions.terminating not true.
func counts(c discoveryv1.EndpointConditions) bool {
	return (c.Ready == nil || *c.Ready) && (c.Terminating == nil || !*c.Terminating)
}

// project keeps of an EndpointSlice what the count needs. An endpoint is
// one address: the first of its addresses (the API says consumers use the
// first; the others are the same endpoint).
func project(s *discoveryv1.EndpointSlice) slice {
	out := slice{name: s.Name, kind: addressTypeOf(s.AddressType)}
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		if len(e.Addresses) == 0 || !counts(e.Conditions) {
			continue
		}
		out.ready = append(out.ready, hashAddress(e.Addresses[0]))
	}
	if len(out.ready) > 0 {
		// Exactly as long as needed: the slice is kept.
		out.ready = append(make([]uint64, 0, len(out.ready)), out.ready...)
	}
	return out
}

func hashAddress(a string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(a))
	return h.Sum64()
}

// count is a Service's number of ready endpoints from its slices: an
// address in several slices counts once, and with several address types
// (a dual-stack Service has an IPv4 and an IPv6 slice for the same pods)
// the largest count is taken.
func count(slices []slice) int {
	var seen [addressOther + 1]map[uint64]struct{}
	best := 0
	for _, s := range slices {
		if seen[s.kind] == nil {
			seen[s.kind] = map[uint64]struct{}{}
		}
		for _, h := range s.ready {
			seen[s.kind][h] = struct{}{}
		}
		best = max(best, len(seen[s.kind]))
	}
	return best
}

// Ready is the number of ready endpoints of a Service whose EndpointSlices
// are slices, by the rules of count.
func Ready(slices []discoveryv1.EndpointSlice) int {
	projected := make([]slice, 0, len(slices))
	for i := range slices {
		projected = append(projected, project(&slices[i]))
	}
	return count(projected)
}
