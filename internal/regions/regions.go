// Package regions names the runtime/trace regions that the manager marks
// on a flip's path: a Go execution trace of the manager (its
// /debug/pprof/trace endpoint, with --pprof-bind-address) then shows when
// each state and switch was reconciled and each of its writes sent, one
// region per piece of work on the goroutine that did it. A region costs
// next to nothing while no trace runs. `make bench` reads them with
// BENCH_TRACE (docs/benchmarks.md, "Tracing a flip"). It imports nothing
// of the operator's.
package regions

// The regions, each around the work its name says.
const (
	// StateReconcile is a reconcile of a DynamicIngressState or a
	// ClusterDynamicIngressState.
	StateReconcile = "state reconcile"
	// StateStatus is the status patch of a state.
	StateStatus = "state status write"
	// SwitchReconcile is a reconcile of a DynamicIngress or a
	// DynamicHTTPRoute.
	SwitchReconcile = "switch reconcile"
	// TargetWrite is the server-side apply of a switch's Ingress or
	// HTTPRoute.
	TargetWrite = "target write"
	// SwitchStatus is the status patch of a switch.
	SwitchStatus = "switch status write"
	// Event is an event handed to the recorder by the event pacer (the
	// recorder sends it on a goroutine of its own).
	Event = "event recorded"
	// ServedRequest is one request of a served check.
	ServedRequest = "served check request"
)

// All is every region, in the order of a flip.
var All = []string{StateReconcile, StateStatus, SwitchReconcile, TargetWrite, SwitchStatus, Event, ServedRequest}
