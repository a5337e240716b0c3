package writes

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// MetadataWrites sends the engine's writes whose answer it needs only the
// metadata of (the new resourceVersion): applies of targets and patches of
// switch statuses. The API server then encodes, and the manager decodes,
// a PartialObjectMetadata instead of the whole object. Each kind's
// resource is looked up once, not on every request as controller-runtime's
// metadata client does. With a positive --kube-api-qps these writes have a
// rate limiter of their own, like each API group and version of the
// manager's other client.
type MetadataWrites struct {
	client metadata.Interface
	mapper meta.RESTMapper

	mu        sync.Mutex
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// NewMetadataWrites returns the metadata-only writer of mgr's cluster.
func NewMetadataWrites(mgr ctrl.Manager) (*MetadataWrites, error) {
	client, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the metadata client: %w", err)
	}
	return &MetadataWrites{client: client, mapper: mgr.GetRESTMapper(), resources: map[schema.GroupVersionKind]schema.GroupVersionResource{}}, nil
}

// resource is the namespaced resource of gvk.
func (w *MetadataWrites) resource(gvk schema.GroupVersionKind, namespace string) (metadata.ResourceInterface, error) {
	w.mu.Lock()
	gvr, ok := w.resources[gvk]
	w.mu.Unlock()
	if !ok {
		mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		gvr = mapping.Resource
		w.mu.Lock()
		w.resources[gvk] = gvr
		w.mu.Unlock()
	}
	return w.client.Resource(gvr).Namespace(namespace), nil
}

// Apply sends body as a server-side Apply of fieldOwner, with force, and
// returns the object's new resourceVersion.
func (w *MetadataWrites) Apply(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName, body []byte, fieldOwner string) (string, error) {
	res, err := w.resource(gvk, key.Namespace)
	if err != nil {
		return "", err
	}
	out, err := res.Patch(ctx, key.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldOwner, Force: ptr.To(true)})
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

// PatchStatus sends a JSON merge patch to the status of the object and
// returns its new resourceVersion.
func (w *MetadataWrites) PatchStatus(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName, patch []byte) (string, error) {
	res, err := w.resource(gvk, key.Namespace)
	if err != nil {
		return "", err
	}
	out, err := res.Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}
