package states

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
)

// notSyncedRetry is how soon a service state is looked at again while the
// manager has not yet listed every Service and EndpointSlice: until then a
// Service may only look missing.
const notSyncedRetry = 250 * time.Millisecond

// serviceSides remembers, for each service state, which side of minReady
// its Service's count is on and since when, as this manager saw it. It is
// memory only: a restarted manager starts every timer again, so an answer
// that still holds is never rewritten, and one that no longer does waits
// its full delay from the start (docs/behaviour.md).
type serviceSides struct {
	mu    sync.Mutex
	sides map[string]serviceSide
}

type serviceSide struct {
	service   types.NamespacedName
	available bool
	since     time.Time
}

// since records the side the count of service is on now and returns since
// when it has been there; a state that names another Service starts anew.
func (s *serviceSides) since(key string, service types.NamespacedName, available bool, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sides == nil {
		s.sides = map[string]serviceSide{}
	}
	side, ok := s.sides[key]
	if !ok || side.available != available || side.service != service {
		side = serviceSide{service: service, available: available, since: now}
		s.sides[key] = side
	}
	return side.since
}

func (s *serviceSides) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sides, key)
}

// serviceStatus is the status of a state that follows a Service, and when
// to look again; ok is false while the Service's count is not known yet.
func (r *Reconciler) serviceStatus(key string, state *v1beta1.DynamicIngressState, now time.Time) (status v1beta1.DynamicIngressStateStatus, recheck time.Duration, ok bool) {
	if r.Endpoints == nil || !r.Endpoints.HasSynced() {
		return status, notSyncedRetry, false
	}
	svcKey := decision.ServiceKey(state)
	svc := r.Endpoints.Get(svcKey)
	count := decision.ServiceCount{Exists: svc.Exists, Ready: svc.Ready}
	since := now
	if svc.Exists {
		since = r.sides.since(key, svcKey, decision.ServiceAvailable(state.Spec.Service, svc.Ready), now)
	} else {
		r.sides.forget(key)
	}
	status, recheck = decision.ServiceStatus(state, count, since, now)
	return status, recheck, true
}

// ServiceChanged queues the states of either kind that follow the Service
// with this key: the tracker calls it when the Service's existence or
// ready count changed. It finds them by index, never by a scan.
func (r *Reconciler) ServiceChanged(key types.NamespacedName) {
	ctx := context.Background()
	value := index.ServiceKey(key)
	var namespaced v1beta1.DynamicIngressStateList
	if err := r.List(ctx, &namespaced, client.InNamespace(key.Namespace), client.MatchingFields{index.Service: value}, client.UnsafeDisableDeepCopy); err == nil {
		for i := range namespaced.Items {
			r.probes.notify(namespaced.Items[i].Namespace + "/" + namespaced.Items[i].Name)
		}
	}
	if !r.clusterStatesOn {
		return
	}
	var cluster v1beta1.ClusterDynamicIngressStateList
	if err := r.List(ctx, &cluster, client.MatchingFields{index.Service: value}, client.UnsafeDisableDeepCopy); err == nil {
		for i := range cluster.Items {
			r.clusterProbes.notify("/" + cluster.Items[i].Name)
		}
	}
}
