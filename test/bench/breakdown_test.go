package bench

import (
	"context"
	"fmt"
	"time"
)

// breakdownVariant is one manager configuration of the breakdown.
type breakdownVariant struct {
	name  string
	extra []string
}

var breakdownVariants = []breakdownVariant{
	{"defaults (no client-side rate limit, 32 workers)", nil},
	{"--kube-api-qps=200 --kube-api-burst=400 (a client-side rate limit)", []string{"--kube-api-qps=200", "--kube-api-burst=400"}},
	{"--max-concurrent-reconciles=128", []string{"--max-concurrent-reconciles=128"}},
}

// breakdownFlip is one flip seen from both sides: the API server's requests
// and latencies, and the manager's own metrics.
type breakdownFlip struct {
	run flipRun
	// From the manager (controller "dynamicingress").
	queueWait, work histogram
	reconciles      map[string]float64 // by result
	clientRequests  map[string]float64 // by method, as the manager's client counts them
	// From kube-apiserver: mean latency and count of each write.
	server map[string][2]float64 // "APPLY ingresses" -> {mean seconds, count}
}

type breakdownResult struct {
	n        int
	variants []breakdownVariant
	flips    [][]breakdownFlip // by variant
}

// breakdown repeats the flip of the n DynamicIngresses of ns under manager
// configurations (the defaults, a client-side rate limit, more workers),
// with controller-runtime's metrics on, to see where the time goes.
func (b *bench) breakdown(ctx context.Context, ns string, n int) (*breakdownResult, error) {
	res := &breakdownResult{n: n, variants: b.cfg.breakdownVariants}
	for _, v := range b.cfg.breakdownVariants {
		m, err := b.h.startManager(managerOptions{metrics: true, extra: v.extra})
		if err != nil {
			return nil, err
		}
		flips, err := b.breakdownVariant(ctx, ns, n, m, v)
		m.stop()
		if err != nil {
			return nil, err
		}
		res.flips = append(res.flips, flips)
	}
	return res, nil
}

func (b *bench) breakdownVariant(ctx context.Context, ns string, n int, m *managerProc, v breakdownVariant) ([]breakdownFlip, error) {
	// The new manager reconciles every DynamicIngress once at start (no
	// writes: they are in sync); wait for that before flipping.
	deadline := time.Now().Add(flipTimeout(n, 50*time.Millisecond))
	for {
		mm, err := scrapeURL(ctx, m.metricsURL, []string{"controller_runtime_reconcile_total", "workqueue_depth"})
		if err != nil {
			return nil, err
		}
		done := mm.sum("controller_runtime_reconcile_total", map[string]string{"controller": "dynamicingress"})
		depth := mm.sum("workqueue_depth", map[string]string{"controller": "dynamicingress"})
		if done >= float64(n) && depth == 0 {
			break
		}
		if err := m.check(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("breakdown: the manager reconciled %g of %d DynamicIngresses at start", done, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := b.waitQuiet(ctx, b.cfg.quiet, 30*time.Second); err != nil {
		return nil, err
	}
	var out []breakdownFlip
	for rep := range b.cfg.breakdownReps {
		for _, active := range []bool{true, false} {
			mBefore, err := scrapeURL(ctx, m.metricsURL, managerPrefixes)
			if err != nil {
				return nil, err
			}
			aBefore, err := b.h.apiserverMetrics(ctx)
			if err != nil {
				return nil, err
			}
			run, err := b.operatorFlip(ctx, inNamespace(ns, n), active, m)
			if err != nil {
				return nil, err
			}
			mAfter, err := scrapeURL(ctx, m.metricsURL, managerPrefixes)
			if err != nil {
				return nil, err
			}
			aAfter, err := b.h.apiserverMetrics(ctx)
			if err != nil {
				return nil, err
			}
			f := breakdownFlip{run: run, reconciles: map[string]float64{}, clientRequests: map[string]float64{}, server: map[string][2]float64{}}
			dq := map[string]string{"controller": "dynamicingress"}
			f.queueWait = mAfter.histogram("workqueue_queue_duration_seconds", dq).sub(mBefore.histogram("workqueue_queue_duration_seconds", dq))
			f.work = mAfter.histogram("workqueue_work_duration_seconds", dq).sub(mBefore.histogram("workqueue_work_duration_seconds", dq))
			for _, result := range []string{"success", "error", "requeue", "requeue_after"} {
				match := map[string]string{"controller": "dynamicingress", "result": result}
				f.reconciles[result] = mAfter.sum("controller_runtime_reconcile_total", match) - mBefore.sum("controller_runtime_reconcile_total", match)
			}
			for _, s := range mAfter {
				if s.name == "rest_client_requests_total" {
					f.clientRequests[s.labels["method"]+" "+s.labels["code"]] += s.value
				}
			}
			for _, s := range mBefore {
				if s.name == "rest_client_requests_total" {
					f.clientRequests[s.labels["method"]+" "+s.labels["code"]] -= s.value
				}
			}
			for _, w := range serverWrites {
				mean, count := serverLatency(aBefore, aAfter, w.verb, w.resource, w.subresource)
				f.server[w.label()] = [2]float64{mean, count}
			}
			out = append(out, f)
			b.progress("breakdown N=%d %s, round %d %s: %s; queue wait mean %s, reconcile mean %s, reconciles %v",
				n, v.name, rep+1, direction(active), round(run.total), seconds(f.queueWait.mean()), seconds(f.work.mean()), f.reconciles)
		}
	}
	return out, nil
}

var managerPrefixes = []string{"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "controller_runtime_reconcile_total", "rest_client_requests_total"}

// serverWrite names one kind of write in kube-apiserver's metrics.
type serverWrite struct{ verb, resource, subresource string }

func (w serverWrite) label() string {
	r := w.resource
	if w.subresource != "" {
		r += "/" + w.subresource
	}
	return w.verb + " " + r
}

var serverWrites = []serverWrite{
	{"APPLY", "ingresses", ""},
	{"PATCH", "ingresses", ""},
	{"PATCH", "dynamicingresses", "status"},
	{"PATCH", "dynamicingressstates", "status"},
	{"POST", "events", ""},
	{"PATCH", "events", ""},
}

func seconds(s float64) string {
	return round(time.Duration(s * float64(time.Second)))
}
