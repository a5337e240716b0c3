package plugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// A fake API server for the plugin's requests: controller-runtime's fake
// client holding the objects, with the field selectors the CRDs make
// selectable, and a hook (refuse) that fails requests the way a real API
// server does (429, 5xx, Forbidden, a dropped connection).

func pluginScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, gatewayv1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// request is one request the fake API server is asked: a verb (get, list,
// watch, patch) on a resource (plural.group) in a namespace.
type request struct {
	verb, resource, namespace string
}

// refuse says how the fake API server answers a request: nil to serve it.
type refuse func(r request) error

// fakeCluster is a client of a fake API server holding objs, answering as
// refuse says. Like an API server that predates watch-list, it refuses a
// watch that asks for the initial events, so informers list.
func fakeCluster(t *testing.T, refused refuse, objs ...client.Object) client.WithWatch {
	t.Helper()
	user, _ := fakeClusterAndAdmin(t, refused, objs...)
	return user
}

// fakeClusterAndAdmin is fakeCluster, and a client of the same fake API
// server that is refused nothing, to look at what the user did.
func fakeClusterAndAdmin(t *testing.T, refused refuse, objs ...client.Object) (user, admin client.WithWatch) {
	t.Helper()
	s := pluginScheme(t)
	byName := func(o client.Object) []string { return []string{o.GetName()} }
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&v1beta1.DynamicIngressState{}, "metadata.name", byName).
		WithIndex(&v1beta1.ClusterDynamicIngressState{}, "metadata.name", byName).
		WithIndex(&v1beta1.DynamicIngress{}, stateField, func(o client.Object) []string {
			return []string{o.(*v1beta1.DynamicIngress).Spec.State}
		}).
		WithIndex(&v1beta1.DynamicIngress{}, stateRefField, func(o client.Object) []string {
			if ref := o.(*v1beta1.DynamicIngress).Spec.StateRef; ref != nil {
				return []string{ref.Name}
			}
			// As the API server evaluates an absent selectable field.
			return []string{""}
		}).
		Build()
	if refused == nil {
		refused = func(request) error { return nil }
	}
	resourceOf := func(obj runtime.Object) string {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			t.Errorf("no kind for %T: %v", obj, err)
		}
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		return resourceName(gvk)
	}
	listRequest := func(verb string, list client.ObjectList, opts []client.ListOption) request {
		o := &client.ListOptions{}
		o.ApplyOptions(opts)
		return request{verb: verb, resource: resourceOf(list), namespace: o.Namespace}
	}
	user = interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := refused(request{"get", resourceOf(obj), key.Namespace}); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := refused(listRequest("list", list, opts)); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			if err := refused(listRequest("watch", list, opts)); err != nil {
				return nil, err
			}
			o := &client.ListOptions{}
			o.ApplyOptions(opts)
			if o.Raw != nil && o.Raw.SendInitialEvents != nil && *o.Raw.SendInitialEvents {
				return nil, apierrors.NewBadRequest("sendInitialEvents is not supported by this fake")
			}
			return c.Watch(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := refused(request{"patch", resourceOf(obj), obj.GetNamespace()}); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return user, c
}

// forbidden is the API server's refusal of r to the user alice.
func forbidden(r request) error {
	resource, group, _ := strings.Cut(r.resource, ".")
	where := fmt.Sprintf("in the namespace %q", r.namespace)
	if r.namespace == "" {
		where = "at the cluster scope"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
		fmt.Errorf("User \"alice\" cannot %s resource %q in API group %q %s", r.verb, resource, group, where))
}

// counted answers each kind of request (verb and resource) as answer
// says, given how many such requests came before.
func counted(answer func(r request, before int) error) refuse {
	var mu sync.Mutex
	seen := map[request]int{}
	return func(r request) error {
		mu.Lock()
		key := request{verb: r.verb, resource: r.resource}
		before := seen[key]
		seen[key]++
		mu.Unlock()
		return answer(r, before)
	}
}

// errDropped is a connection the API server's side dropped.
var errDropped = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
