package controller_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestFlipWritesEveryTargetBeforeAnyStatus flips one state driving more
// DynamicIngresses than the controller has workers: every Ingress is
// written before the first status (and its event), so that during a flip
// the API server works on what traffic sees first. The order is read from
// resourceVersions, which this API server takes from etcd's revision.
func TestFlipWritesEveryTargetBeforeAnyStatus(t *testing.T) {
	const n = 60
	ns := newNamespace(t)
	state := builders.FixedState(ns, "flag", "503", "").Obj()
	create(t, state)
	for i := range n {
		name := fmt.Sprintf("site-%02d", i)
		create(t, builders.DynamicIngress(ns, name).State("flag").ExpectCode("200").
			Passive(builders.IngressTo(name+".example.com", "web")).
			Active(builders.IngressTo(name+".example.com", "sorry")).Obj())
	}
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(n), HaveEach("web")))
	eventually(t, readyCount(t, ns)).Should(Equal(n))

	setFixedStatus(t, state, "200")
	eventually(t, backendsIn(t, ns)).Should(HaveEach("sorry"))
	eventually(t, activeCount(t, ns)).Should(Equal(n))

	ingresses := &networkingv1.IngressList{}
	if err := k8s.List(ctx, ingresses, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	dis := &v1beta1.DynamicIngressList{}
	if err := k8s.List(ctx, dis, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	lastIngress, lastIngressRV := "", uint64(0)
	for _, ing := range ingresses.Items {
		if rv := revision(t, ing.ResourceVersion); rv > lastIngressRV {
			lastIngress, lastIngressRV = ing.Name, rv
		}
	}
	var early []string
	for _, di := range dis.Items {
		if rv := revision(t, di.ResourceVersion); rv < lastIngressRV {
			early = append(early, fmt.Sprintf("%s (%d)", di.Name, rv))
		}
	}
	slices.Sort(early)
	if len(early) > 0 {
		t.Errorf("the statuses of %d DynamicIngresses were written before Ingress %s (resourceVersion %d): %v",
			len(early), lastIngress, lastIngressRV, early)
	}
}

func revision(t *testing.T, resourceVersion string) uint64 {
	t.Helper()
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", resourceVersion, err)
	}
	return rv
}

// readyCount and activeCount count the DynamicIngresses of ns whose Ready
// (Active) condition is True.
func readyCount(t *testing.T, ns string) func() int { return trueCount(t, ns, v1beta1.ConditionReady) }

func activeCount(t *testing.T, ns string) func() int { return trueCount(t, ns, v1beta1.ConditionActive) }

func trueCount(t *testing.T, ns, condType string) func() int {
	return func() int {
		dis := &v1beta1.DynamicIngressList{}
		if err := k8s.List(ctx, dis, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, di := range dis.Items {
			for _, c := range di.Status.Conditions {
				if c.Type == condType && c.Status == "True" {
					count++
				}
			}
		}
		return count
	}
}
