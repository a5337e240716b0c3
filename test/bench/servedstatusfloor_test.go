package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// The Served condition's floor (the served measure, with spec.served): how
// soon after its host is served a plain client has a switch's status
// written, on the same machine, in a flip like the owned floor's through
// the same Traefik. The plain client applies the owned floor's Ingresses
// (32 workers) and, the moment the outside client sees a host served,
// requests that host once through Traefik itself (at most 8 in flight, as
// a namespace's served checks), as a served check must at least to learn
// it, and then patches the status the manager wrote to
// that switch in its last flip the same way onto a copy of the switch, as
// the manager writes a status (a merge patch of what changed, made
// beforehand, answered with the metadata only; 32 workers, as the
// manager's reconcile workers). The copies are objects of a copy of the
// DynamicIngress CRD (the same schema, validation rules and status
// subresource) in a group of the bench's own, which the manager does not
// watch: a status patch costs the API server the same whoever sends it.
// The plain client learns from the outside client, with one request of
// its own per host, what the manager's checks find out through Traefik:
// it tells what the bar of 1.5 s asks of this machine (a check may see a
// host a little before the outside client does, so the operator can come
// in under it), and what the hosts' bar asks of a writer that also writes
// the statuses and checks each host once.

const (
	statusFloorGroup   = "floor.bench.dynamicingress.io"
	statusFloorName    = "served-status-floor"
	statusFloorWorkers = 32
)

var statusFloorGVK = schema.GroupVersionKind{Group: statusFloorGroup, Version: v1beta1.GroupVersion.Version, Kind: "DynamicIngress"}

// statusFloor is the copies of the floor namespace's switches and the
// statuses the manager wrote in its last flip each way.
type statusFloor struct {
	h *harness
	s servedNamespace
	// statuses[active][name] is the status the manager wrote to the
	// operator's switch name in its last flip to the mode.
	statuses map[bool]map[string]json.RawMessage
	// written is the status last written to each copy.
	written map[string]json.RawMessage
	// res writes the statuses as the manager does: a merge patch of what
	// changed, answered with the metadata only.
	res metadata.ResourceInterface
	// check requests each host through Traefik before its status is
	// written, on connections of its own (not the outside client's), at
	// most statusFloorChecksInFlight at once.
	check *outsideClient
}

// installStatusFloorCRD creates the copy of the DynamicIngress CRD in
// statusFloorGroup (once per control plane) and waits until it serves.
func installStatusFloorCRD(ctx context.Context, h *harness) error {
	raw, err := os.ReadFile(filepath.Join(controlplane.CRDDir(), "ingress.dynamicingress.io_dynamicingresses.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		return err
	}
	crd.SetName("dynamicingresses." + statusFloorGroup)
	if err := unstructured.SetNestedField(crd.Object, statusFloorGroup, "spec", "group"); err != nil {
		return err
	}
	if err := h.c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the status floor's CRD: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(crd.GroupVersionKind())
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// setupStatusFloor creates a copy of each of the operator's switches in
// the floor's namespace, with the status the manager wrote to it (passive).
func (sm *servedMeasure) setupStatusFloor(ctx context.Context, floor, op servedNamespace) (*statusFloor, error) {
	h := sm.b.h
	if err := installStatusFloorCRD(ctx, h); err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(h.cfg)
	if err != nil {
		return nil, err
	}
	gvr := statusFloorGVK.GroupVersion().WithResource("dynamicingresses")
	sf := &statusFloor{h: h, s: floor, statuses: map[bool]map[string]json.RawMessage{}, written: map[string]json.RawMessage{},
		res: md.Resource(gvr).Namespace(floor.ns), check: newOutsideClient(sm.traefik.Address, statusFloorChecksInFlight)}
	if err := sf.record(ctx, op, false); err != nil {
		return nil, err
	}
	if err := parallel(floor.n, statusFloorWorkers, func(i int) error {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sm.servedSwitch(floor, i))
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(statusFloorGVK)
		if err := h.c.Create(ctx, u); err != nil {
			return err
		}
		body, err := json.Marshal(map[string]json.RawMessage{"status": sf.statuses[false][objName(i)]})
		if err != nil {
			return err
		}
		_, err = sf.res.Patch(ctx, objName(i), types.MergePatchType, body, metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating the status floor's %d copies: %w", floor.n, err)
	}
	for i := range floor.n {
		sf.written[objName(i)] = sf.statuses[false][objName(i)]
	}
	if err := sf.warm(ctx); err != nil {
		return nil, err
	}
	return sf, nil
}

// record keeps the statuses the manager wrote to the switches of op, in
// the mode they are in.
func (sf *statusFloor) record(ctx context.Context, op servedNamespace, active bool) error {
	var list v1beta1.DynamicIngressList
	if err := sf.h.c.List(ctx, &list, client.InNamespace(op.ns)); err != nil {
		return err
	}
	statuses := make(map[string]json.RawMessage, len(list.Items))
	for _, di := range list.Items {
		raw, err := json.Marshal(di.Status)
		if err != nil {
			return err
		}
		statuses[di.Name] = raw
	}
	sf.statuses[active] = statuses
	return nil
}

// patches is, for each copy, the merge patch from the status last
// written to it to the one the manager wrote in its last flip to the mode;
// they count as written.
func (sf *statusFloor) patches(active bool) ([][]byte, error) {
	out := make([][]byte, sf.s.n)
	for i := range sf.s.n {
		name := objName(i)
		to, ok := sf.statuses[active][name]
		if !ok {
			return nil, fmt.Errorf("no %s status of %s recorded from the operator", shapeDir(active), name)
		}
		diff, err := jsonpatch.CreateMergePatch(sf.written[name], to)
		if err != nil {
			return nil, err
		}
		if out[i], err = json.Marshal(map[string]json.RawMessage{"status": diff}); err != nil {
			return nil, err
		}
		sf.written[name] = to
	}
	return out, nil
}

// copies lists and watches the copies.
func (sf *statusFloor) copies() crLister {
	return crLister{h: sf.h, ns: sf.s.ns, newList: func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(statusFloorGVK.GroupVersion().WithKind("DynamicIngressList"))
		return l
	}}
}

// copyServedFor matches a copy whose Served condition is True for the mode.
func copyServedFor(active bool) func(runtime.Object) (string, bool) {
	served := servedFor(active)
	return func(o runtime.Object) (string, bool) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return "", false
		}
		var di v1beta1.DynamicIngress
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &di); err != nil {
			return u.GetName(), false
		}
		return served(&di)
	}
}

// statusWrites is one flip's status patches: each host's index as the
// outside client sees it served, patched by statusFloorWorkers goroutines.
type statusWrites struct {
	queue  chan int
	cancel context.CancelFunc
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

// start starts the writers of sf's copies to the mode, their patches
// made beforehand, for at most the flip's timeout.
func (sf *statusFloor) start(ctx context.Context, active bool) (*statusWrites, error) {
	patches, err := sf.patches(active)
	if err != nil {
		return nil, err
	}
	// The flip's timeout bounds every write's requests.
	ctx, cancel := context.WithTimeout(ctx, flipTimeout(sf.s.n, 100*time.Millisecond))
	w := &statusWrites{queue: make(chan int, sf.s.n), cancel: cancel}
	for range statusFloorWorkers {
		w.wg.Go(func() {
			for i := range w.queue {
				if err := sf.write(ctx, i, active, patches[i]); err != nil {
					w.mu.Lock()
					if w.err == nil {
						w.err = err
					}
					w.mu.Unlock()
				}
			}
		})
	}
	return w, nil
}

// write requests host i once through Traefik, as a served check would to
// see it served, then patches its copy's status. A request that gets no
// answer (a connection error) is sent again until ctx ends (the flip's
// timeout); an answer without the mode's shape, for a host the outside
// client saw served, fails the flip.
func (sf *statusFloor) write(ctx context.Context, i int, active bool, patch []byte) error {
	host := sf.s.hosts[i]
	for {
		ok, answer, err := sf.check.answer(ctx, host, active)
		if err == nil && !ok {
			return fmt.Errorf("the status floor's request of %s, served to the outside client, got %s", host, answer)
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the status floor's requests of %s, served to the outside client, got no answer until the flip's timeout: %w", host, err)
		case <-time.After(sweepPeriod):
		}
	}
	_, err := sf.res.Patch(ctx, objName(i), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// warm opens the client's connections before the first flip, so that no
// flip's requests dial one: statusFloorChecksInFlight requests of a host
// at once, in the passive shape its setup leaves it in.
func (sf *statusFloor) warm(ctx context.Context) error {
	return parallel(statusFloorChecksInFlight, statusFloorChecksInFlight, func(int) error {
		if ok, answer := sf.check.answers(ctx, sf.s.hosts[0], false); !ok {
			return fmt.Errorf("warming the status floor's connections: %s answered %s", sf.s.hosts[0], answer)
		}
		return nil
	})
}

// statusFloorChecksInFlight is how many requests the status floor's
// writers hold in flight together, on as many connections of their own
// (warm opens them before the first flip): as many as a namespace's
// served checks (docs/behaviour.md, "Served").
const statusFloorChecksInFlight = 8

// served queues host i's status.
func (w *statusWrites) served(i int) { w.queue <- i }

// finish waits for the patches queued; the first error, if any.
func (w *statusWrites) finish() error {
	w.once.Do(func() { close(w.queue) })
	w.wg.Wait()
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()

	return w.err
}

// delete removes the copies.
func (sf *statusFloor) delete(ctx context.Context) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(statusFloorGVK)
	return sf.h.c.DeleteAllOf(ctx, u, client.InNamespace(sf.s.ns))
}

// statusFloorFlips runs the status floor's flips, each way in every round,
// once Traefik and the API server are quiet.
func (sm *servedMeasure) statusFloorFlips(ctx context.Context, sf *statusFloor, floor servedNamespace, own *metav1.OwnerReference, res *servedSuite) error {
	b := sm.b
	for rep := range b.cfg.servedReps {
		for _, active := range []bool{true, false} {
			run, err := sm.floorFlip(ctx, floor, active, statusFloorWorkers, own, sf)
			if err != nil {
				return err
			}
			res.runs = append(res.runs, run)
			b.progress("served N=%d round %d %s: %s: last host served %s (first %s); Ingresses written %s–%s; reloads seen (at: hosts) %s%s; status written after the host max %s, p50 %s; CPU s %s",
				floor.n, rep+1, direction(active), run.who, round(run.served), round(run.firstServed), round(run.firstWrite), round(run.lastWrite),
				reloadsString(run.reloads), run.missed(), round(maxDuration(run.conditionDelays)), round(percentile(run.conditionDelays, 0.5)), servedCPU(run.cpu))
		}
	}
	return nil
}
