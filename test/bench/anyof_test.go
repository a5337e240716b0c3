package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The anyOf measure (BENCH_ONLY=anyof): switches of one namespace
// following `spec.anyOf` of two fixed states, flipped by one of them
// against the owned floor writing as many Ingresses.

// anyOfResult is the anyOf measure.
type anyOfResult struct {
	// setup: from creating the states until every Ingress existed and
	// every DynamicIngress was Ready.
	setup time.Duration
	flips *flipSuiteResult
	// entriesShown: the switches whose status, after the last flip (to
	// passive), showed both entries NotMatched under STATE anyOf(2).
	entriesShown int
}

// anyOfFlip creates cfg.anyOfN DynamicIngresses in one namespace, each
// following spec.anyOf of the flip measure's fixed state and of the calm
// state, and flips the first against the owned floor writing as many
// Ingresses in a namespace of its own.
func (b *bench) anyOfFlip(ctx context.Context) (*anyOfResult, error) {
	res := &anyOfResult{}
	op := switches{namespaces: []string{"anyof"}, n: b.cfg.anyOfN, anyOf: true}
	floor := inNamespace("anyof-floor", b.cfg.anyOfN)
	inspect := func() error {
		var list v1beta1.DynamicIngressList
		if err := b.h.c.List(ctx, &list, client.InNamespace(op.namespaces[0])); err != nil {
			return err
		}
		for _, di := range list.Items {
			if di.Status.State == "anyOf(2)" && passiveEntries(di.Status.States) {
				res.entriesShown++
			}
		}
		return nil
	}
	var err error
	if res.setup, res.flips, err = b.ownedFloorMeasure(ctx, "anyof", b.cfg.anyOfFlipReps, op, floor, inspect); err != nil {
		return nil, err
	}
	return res, nil
}

// passiveEntries tells whether status.states shows the flip entry and the
// calm entry, in that order, both answering otherwise than expected.
func passiveEntries(states []v1beta1.EntryStatus) bool {
	if len(states) != 2 || states[0].Name != flipStateName || states[1].Name != calmStateName {
		return false
	}
	for _, e := range states {
		if e.Matched != metav1.ConditionFalse || e.Reason != v1beta1.ReasonNotMatched {
			return false
		}
	}
	return true
}

func (r *anyOfResult) markdown(cfg config) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("#### anyOf: %d switches following two states\n\n", r.flips.n)
	w("%d DynamicIngresses of one namespace each follow `spec.anyOf` of two entries: the fixed DynamicIngressState the flip measure flips, expecting 200, and a second fixed state that answers 503 and never matches its entry's 200; all were Ready %s after the states' create. ",
		r.flips.n, round(r.setup))
	w("The first state's `spec.fixedResponse.status` is patched each way, as in the flip measure, against the owned floor writing %d Ingresses in a namespace of its own, in rounds whose order rotates. ", r.flips.n)
	w("After the last flip %d of %d statuses showed both entries NotMatched.\n\n", r.entriesShown, r.flips.n)
	w("%s", r.flips.ownedFloorTable(cfg.ownedFloorWorkers))
	return sb.String()
}
