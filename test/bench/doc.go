// Package bench measures the operator against baselines measured in the same
// run: the fan-out of one state to N Ingresses against plain client-go
// server-side applies and kubectl, writes in steady state against the probes
// sent, webhook latency, probe throughput, memory, the flip beside other
// tenants' states probing 1 MiB answers (BENCH_ONLY=noise runs that one
// alone), states that follow a Service's EndpointSlices
// (BENCH_ONLY=service), and pins that end at one time (BENCH_ONLY=pinend).
// Everything lives in _test.go files: `make bench` runs the full set and
// rewrites the generated section of docs/benchmarks.md, `make bench-small`
// a cheap small-N run. See docs/benchmarks.md.
package bench
