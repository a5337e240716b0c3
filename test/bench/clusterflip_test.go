package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The cluster state measure (BENCH_ONLY=cluster): switches in many
// namespaces following one ClusterDynamicIngressState, flipped against the
// owned floor writing as many Ingresses over as many namespaces.

// clusterResult is the cluster state measure.
type clusterResult struct {
	namespaces, perNamespace int
	// setup: from creating the state until every Ingress existed and
	// every DynamicIngress was Ready.
	setup time.Duration
	flips *flipSuiteResult
}

// clusterNamespaces names the namespaces of the measure's switches
// ("cluster-00") or of its owned floor ("cluster-floor-00").
func clusterNamespaces(prefix string, k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// clusterFlip creates cfg.clusterNamespaces namespaces of
// cfg.clusterPerNamespace DynamicIngresses following one fixed
// ClusterDynamicIngressState whose grant admits them by a label, and
// flips it against the owned floor writing as many Ingresses spread over
// as many namespaces of its own.
func (b *bench) clusterFlip(ctx context.Context) (*clusterResult, error) {
	h, cfg := b.h, b.cfg
	res := &clusterResult{namespaces: cfg.clusterNamespaces, perNamespace: cfg.clusterPerNamespace}
	n := res.namespaces * res.perNamespace
	op := switches{namespaces: clusterNamespaces("cluster", res.namespaces), n: n, cluster: true}
	floor := switches{namespaces: clusterNamespaces("cluster-floor", res.namespaces), n: n}
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	b.progress("cluster: creating the cluster state and %d DynamicIngresses in %d namespaces", n, res.namespaces)
	if res.setup, err = b.setupOperator(ctx, op); err != nil {
		return nil, err
	}
	b.progress("cluster: all Ready after %s; creating the owned floor's Ingresses", round(res.setup))
	own, err := b.setupOwnedFloor(ctx, floor)
	if err != nil {
		return nil, err
	}
	if _, err := b.waitQuiet(ctx, 2*cfg.quiet, 60*time.Second); err != nil {
		return nil, err
	}
	if res.flips, err = b.againstOwnedFloor(ctx, "cluster flip", cfg.clusterFlipReps, op, floor, own, m); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	if err := client.IgnoreNotFound(h.c.Delete(ctx, op.state(""))); err != nil {
		return nil, err
	}
	for _, ns := range slices.Concat(op.namespaces, floor.namespaces) {
		if err := h.clearNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (r *clusterResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### Cluster state: %d switches in %d namespaces following one %s\n\n", r.flips.n, r.namespaces, v1beta1.StateKindCluster)
	w("%d namespaces of %d DynamicIngresses each follow one fixed %s (`spec.stateRef`) whose grant admits them by a namespace label (`from: Selector`); all were Ready %s after the state's create. ",
		r.namespaces, r.perNamespace, v1beta1.StateKindCluster, round(r.setup))
	w("Its `spec.fixedResponse.status` is patched each way, as in the flip measure, against the owned floor writing %d Ingresses spread alike over %d namespaces of its own (one owner per namespace), in rounds whose order rotates.\n\n",
		r.flips.n, r.namespaces)
	w("%s", r.flips.ownedFloorTable(cfg.ownedFloorWorkers))
	return sb.String()
}
