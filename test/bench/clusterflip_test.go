package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

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
	cfg := b.cfg
	res := &clusterResult{namespaces: cfg.clusterNamespaces, perNamespace: cfg.clusterPerNamespace}
	n := res.namespaces * res.perNamespace
	op := switches{namespaces: clusterNamespaces("cluster", res.namespaces), n: n, cluster: true}
	floor := switches{namespaces: clusterNamespaces("cluster-floor", res.namespaces), n: n}
	var err error
	if res.setup, res.flips, err = b.ownedFloorMeasure(ctx, "cluster", cfg.clusterFlipReps, op, floor, nil); err != nil {
		return nil, err
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
