package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// setupFloor creates the passive Ingresses of s with the floor's field
// manager.
func (b *bench) setupFloor(ctx context.Context, s switches) error {
	if err := b.ensureNamespaces(ctx, s); err != nil {
		return err
	}
	return b.applyAll(ctx, s, false, 64, floorFieldManager)
}

const floorFieldManager = "bench-floor"

// floorName names the plain floor at a concurrency; ownedFloorName the
// floor with the operator's metadata (the floor the operator is measured
// against: it writes what the operator has to write).
func floorName(workers int) string      { return fmt.Sprintf("floor-%d", workers) }
func ownedFloorName(workers int) string { return fmt.Sprintf("floor-owned-%d", workers) }

// completeFloorName names the owned floor that writes the statuses after
// the Ingresses (floorFlipThen).
func completeFloorName(workers int) string { return fmt.Sprintf("floor-complete-%d", workers) }

// owners are the owners of the owned floor's Ingresses, one per namespace.
type owners map[string]*metav1.OwnerReference

// setupOwnedFloor creates the passive Ingresses of s, each controlled by a
// ConfigMap of its namespace, for the floor that writes what the operator
// writes. It returns the owners.
func (b *bench) setupOwnedFloor(ctx context.Context, s switches) (owners, error) {
	if err := b.ensureNamespaces(ctx, s); err != nil {
		return nil, err
	}
	own := owners{}
	for _, ns := range s.namespaces {
		cm, err := b.h.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		own[ns] = &metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	}
	return own, applyEach(ctx, b.h.cs, s.n, 64, floorFieldManager, func(i int) *networkingv1ac.IngressApplyConfiguration {
		return ownedApply(s.ns(i), objName(i), false, own[s.ns(i)], "")
	})
}

func (b *bench) applyAll(ctx context.Context, s switches, active bool, workers int, fieldManager string) error {
	return applyEach(ctx, b.h.cs, s.n, workers, fieldManager, func(i int) *networkingv1ac.IngressApplyConfiguration {
		return baselineApply(s.ns(i), objName(i), active)
	})
}

// applyEach sends the n applies that body makes, each in its own
// namespace, from workers goroutines of the client cs.
func applyEach(ctx context.Context, cs kubernetes.Interface, n, workers int, fieldManager string, body func(i int) *networkingv1ac.IngressApplyConfiguration) error {
	return parallel(n, workers, func(i int) error {
		ac := body(i)
		_, err := cs.NetworkingV1().Ingresses(*ac.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	})
}

// floorFlip applies the Ingresses of s in the new shape from a plain
// client-go client without a rate limit, on workers goroutines. With
// owners, every apply also carries what the operator's do: the controller
// ownerReference and the Ingress's UID as a precondition (read before the
// flip, untimed).
func (b *bench) floorFlip(ctx context.Context, s switches, active bool, workers int, own owners) (flipRun, error) {
	return b.floorFlipThen(ctx, s, active, workers, own, nil)
}

// floorFlipThen is floorFlip, and when statuses is set, once every apply
// is answered, the status patches of the DynamicIngresses of statuses that
// the operator's flip sends (statusFloorPatch), on as many workers: the
// complete flip's floor, timed until the watch shows every status.
func (b *bench) floorFlipThen(ctx context.Context, s switches, active bool, workers int, own owners, statuses *switches) (flipRun, error) {
	n := s.n
	run := flipRun{who: floorName(workers), n: n, active: active}
	body := func(i int) *networkingv1ac.IngressApplyConfiguration {
		return baselineApply(s.ns(i), objName(i), active)
	}
	if own != nil {
		run.who = ownedFloorName(workers)
		uids := map[types.NamespacedName]types.UID{}
		for _, ns := range s.namespaces {
			list, err := b.h.cs.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return run, err
			}
			for _, ing := range list.Items {
				uids[types.NamespacedName{Namespace: ns, Name: ing.Name}] = ing.UID
			}
		}
		body = func(i int) *networkingv1ac.IngressApplyConfiguration {
			ns := s.ns(i)
			return ownedApply(ns, objName(i), active, own[ns], uids[types.NamespacedName{Namespace: ns, Name: objName(i)}])
		}
	}
	ingW, err := b.watchFlip(ctx, s, active)
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	var diW *arrivalSet
	if statuses != nil {
		run.who = completeFloorName(workers)
		if diW, err = statuses.watchArrivals(ctx, b.switchObjects, diSettled(active)); err != nil {
			return run, err
		}
		defer diW.stop()
	}
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	cs, err := b.floorClient(run.who)
	if err != nil {
		return run, err
	}
	cpu0 := b.h.cpu(nil)
	stopProfile := b.profileAPIServer(ctx, fmt.Sprintf("%s-%d-%s", run.who, n, direction(active)))
	defer stopProfile()
	t0 := time.Now()
	ingW.startAt(t0)
	if diW != nil {
		diW.startAt(t0)
	}
	if err := applyEach(ctx, cs, n, workers, floorFieldManager, body); err != nil {
		return run, err
	}
	run.writerDone = time.Since(t0)
	if err := ingW.wait(flipTimeout(n, 10*time.Millisecond)); err != nil {
		return run, fmt.Errorf("floor flip: %w", err)
	}
	run.cpuArrived = b.h.cpu(nil).sub(cpu0)
	run.cpu = run.cpuArrived
	run.summarize(ingW.durations())
	if diW != nil {
		patch := statusFloorPatch(active, time.Now())
		if err := parallel(statuses.n, workers, func(i int) error {
			di := statuses.dynamicIngress(i)
			return b.h.c.Status().Patch(ctx, di, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(floorFieldManager))
		}); err != nil {
			return run, err
		}
		if err := diW.wait(flipTimeout(n, 10*time.Millisecond)); err != nil {
			return run, fmt.Errorf("complete floor flip, statuses: %w", err)
		}
		run.statusDone = maxDuration(diW.durations())
		run.cpu = b.h.cpu(nil).sub(cpu0)
	}
	return run, nil
}

// statusFloorPatch is the merge patch of a switch's status that the
// operator sends when a flip's target is written: both conditions (a merge
// patch replaces a list whole), at generation 1, messages alike in length.
func statusFloorPatch(active bool, at time.Time) []byte {
	mode, status, reason, message := "passive", metav1.ConditionFalse, v1beta1.ReasonNotMatched,
		`State "flip" responded 503, which does not match spec.expected: statusCode 503 is not 200`
	if active {
		mode, status, reason, message = "active", metav1.ConditionTrue, v1beta1.ReasonMatched, `State "flip" responded 200 as expected`
	}
	t := at.UTC().Format(time.RFC3339)
	return fmt.Appendf(nil, `{"status":{"observedGeneration":1,"conditions":[`+
		`{"type":%q,"status":%q,"reason":%q,"message":%q,"lastTransitionTime":%q,"observedGeneration":1},`+
		`{"type":%q,"status":"True","reason":%q,"message":"the Ingress is in the %s shape","lastTransitionTime":%q,"observedGeneration":1}]}}`,
		v1beta1.ConditionActive, status, reason, message, t, v1beta1.ConditionReady, v1beta1.ReasonSynced, mode, t)
}

// setupStatusFloor creates the DynamicIngresses whose statuses the complete
// floor writes: they follow a state that does not exist, so the manager
// writes each status once (StateNotFound) and leaves them alone after.
func (b *bench) setupStatusFloor(ctx context.Context, s switches) error {
	if err := b.ensureNamespaces(ctx, s); err != nil {
		return err
	}
	written, err := s.watchArrivals(ctx, b.switchObjects, hasReadyCondition)
	if err != nil {
		return err
	}
	defer written.stop()
	written.startAt(time.Now())
	if err := parallel(s.n, 32, func(i int) error {
		return b.h.c.Create(ctx, dynamicIngress(s.ns(i), objName(i), "absent"))
	}); err != nil {
		return err
	}
	if err := written.wait(flipTimeout(s.n, 100*time.Millisecond)); err != nil {
		return fmt.Errorf("the manager's status of the complete floor's DynamicIngresses: %w", err)
	}
	return nil
}

// hasReadyCondition matches a DynamicIngress whose status has a Ready
// condition, whatever it says.
func hasReadyCondition(o runtime.Object) (string, bool) {
	di, ok := o.(*v1beta1.DynamicIngress)
	if !ok {
		return "", false
	}
	return di.Name, meta.FindStatusCondition(di.Status.Conditions, v1beta1.ConditionReady) != nil
}

// floorClient is the client a floor (named who) writes its flips from: the
// bench's own, or with BENCH_FLOOR_CLIENTS=own a client of its own, on a
// connection that carries nothing but that floor's writes. The bench's
// client shares one connection with its watches (those that time the
// flip), its collections and its metrics reads. A floor quiet for more
// than 90 s (HTTP/2's idle timeout) dials again.
func (b *bench) floorClient(who string) (kubernetes.Interface, error) {
	if !b.cfg.floorClientsOwn {
		return b.h.cs, nil
	}
	if cs, ok := b.floorClients[who]; ok {
		return cs, nil
	}
	cfg := rest.CopyConfig(b.h.cfg)
	// A Dial of its own (client-go's timeouts) keeps client-go from
	// sharing the cached transport, and its connection, of every client
	// with the same TLS config.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client of its own for %s (BENCH_FLOOR_CLIENTS=own): %w", who, err)
	}
	if b.floorClients == nil {
		b.floorClients = map[string]kubernetes.Interface{}
	}
	b.floorClients[who] = cs
	return cs, nil
}
