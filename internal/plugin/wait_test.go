package plugin

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

const (
	dynamicIngresses = "dynamicingresses.ingress.dynamicingress.io"
	clusterStates    = "clusterdynamicingressstates.ingress.dynamicingress.io"
	ingresses        = "ingresses.networking.k8s.io"
)

// settledCluster is a cluster state answering 200 with a passive follower
// in shop whose status says so (in shape: passive has no target), and one
// in blog that the grant does not admit.
func settledCluster() []client.Object {
	return []client.Object{
		readyClusterState("200"),
		clusterFollower("shop", "web", "", false, metav1.ConditionTrue, v1beta1.ReasonSynced),
		clusterFollower("blog", "web", "", false, metav1.ConditionFalse, v1beta1.ReasonStateNotAdmitted),
	}
}

func waitFor(c client.WithWatch, ns string, timeout time.Duration) (Report, error) {
	_, report, err := Wait(context.Background(), c, []target.Kind{target.Ingress{}}, WaitOptions{Namespace: ns, State: "ks", Cluster: true, Timeout: timeout})
	return report, err
}

// TestWaitLeavesOutNotAdmitted: a follower the grant does not admit (its
// Ready is False, StateNotAdmitted, by design) never keeps wait from
// returning; it is reported apart.
func TestWaitLeavesOutNotAdmitted(t *testing.T) {
	report, err := waitFor(fakeCluster(t, nil, settledCluster()...), "", 5*time.Second)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if diff := cmp.Diff(Summary{Total: 1, Passive: 1, NotAdmitted: 1}, report.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("Left out 1 follower not admitted by the grant of cdis/ks: DynamicIngress blog/web", report.LeftOut("cdis/ks")); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
}

// TestWaitRetriesTransientErrors: the first list and watch of every
// source fail as a busy or failing API server fails them; wait retries
// them and returns once everything is read and in shape.
func TestWaitRetriesTransientErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"429", apierrors.NewTooManyRequests("the server has received too many requests", 1)},
		{"500", apierrors.NewInternalError(errors.New("etcdserver: leader changed"))},
		{"503", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
		{"a dropped connection", errDropped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fakeCluster(t, counted(func(r request, before int) error {
				if r.verb != "get" && before == 0 {
					return tt.err
				}
				return nil
			}), settledCluster()...)
			report, err := waitFor(c, "", 20*time.Second)
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if diff := cmp.Diff(Summary{Total: 1, Passive: 1, NotAdmitted: 1}, report.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitEndsOnForbidden: a Forbidden ends wait at once, whatever came
// before it, with one line naming the permission.
func TestWaitEndsOnForbidden(t *testing.T) {
	tests := []struct {
		name string
		ns   string
		// refused says what the fake API server refuses (forbidden),
		// given how many such requests came before.
		refused func(r request, before int) bool
		want    string
	}{
		{"the switches, in every namespace", "", func(r request, _ int) bool { return r.resource == dynamicIngresses },
			`wait needs list on dynamicingresses.ingress.dynamicingress.io in every namespace (-A; -n NAMESPACE asks in one): dynamicingresses.ingress.dynamicingress.io is forbidden: User "alice" cannot list resource "dynamicingresses" in API group "ingress.dynamicingress.io" at the cluster scope`},
		{"the cluster state", "shop", func(r request, _ int) bool { return r.resource == clusterStates },
			`wait needs watch on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped): clusterdynamicingressstates.ingress.dynamicingress.io is forbidden: User "alice" cannot watch resource "clusterdynamicingressstates" in API group "ingress.dynamicingress.io" at the cluster scope`},
		{"the targets, after a transient error", "shop", func(r request, _ int) bool { return r.resource == ingresses },
			`wait needs watch on ingresses.networking.k8s.io in namespace "shop": ingresses.networking.k8s.io is forbidden: User "alice" cannot watch resource "ingresses" in API group "networking.k8s.io" in the namespace "shop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := settledCluster()
			// Out of shape: the wait goes on until an error ends it.
			objs[1].(*v1beta1.DynamicIngress).Status.Conditions = nil
			c := fakeCluster(t, counted(func(r request, before int) error {
				switch {
				case tt.refused(r, before):
					return forbidden(r)
				case r.resource == dynamicIngresses && before == 0:
					// A transient error first, which must not stand in
					// for the Forbidden.
					return apierrors.NewTooManyRequests("slow down", 1)
				}
				return nil
			}), objs...)
			_, err := waitFor(c, tt.ns, 20*time.Second)
			var perm *PermissionError
			if !errors.As(err, &perm) {
				t.Fatalf("wait returned %v, want a *PermissionError", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitEndsOnForbiddenAfterTheFirstLists: the switches' watch ends
// once the first lists are in (a watch the API server closes), and from
// then on the user may not list nor watch them (a binding removed): wait
// ends with the Forbidden instead of waiting out its timeout.
func TestWaitEndsOnForbiddenAfterTheFirstLists(t *testing.T) {
	objs := settledCluster()
	objs[1].(*v1beta1.DynamicIngress).Status.Conditions = nil
	watching := make(chan *watch.FakeWatcher, 1)
	revoked := make(chan struct{})
	base := fakeCluster(t, counted(func(r request, _ int) error {
		select {
		case <-revoked:
			if r.resource == dynamicIngresses {
				return forbidden(r)
			}
		default:
		}
		return nil
	}), objs...)
	var hooked atomic.Bool
	c := watchHook{WithWatch: base, hook: func(list client.ObjectList, opts *client.ListOptions) watch.Interface {
		if _, ok := list.(*v1beta1.DynamicIngressList); !ok || opts.Raw == nil || opts.Raw.SendInitialEvents != nil || hooked.Swap(true) {
			return nil
		}
		w := watch.NewFake()
		watching <- w
		return w
	}}
	go func() {
		w := <-watching
		close(revoked)
		w.Stop()
	}()
	start := time.Now()
	_, err := waitFor(c, "shop", 30*time.Second)
	var perm *PermissionError
	if !errors.As(err, &perm) {
		t.Fatalf("wait returned %v after %s, want a *PermissionError", err, time.Since(start))
	}
	if perm.Resource != dynamicIngresses || perm.Namespace != "shop" {
		t.Errorf("wait needs %s on %s in %q, want dynamicingresses in shop: %v", perm.Verb, perm.Resource, perm.Namespace, err)
	}
}

// watchHook is a client whose watches hook may answer (nil: the client
// answers).
type watchHook struct {
	client.WithWatch
	hook func(list client.ObjectList, opts *client.ListOptions) watch.Interface
}

func (c watchHook) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if w := c.hook(list, o); w != nil {
		return w, nil
	}
	return c.WithWatch.Watch(ctx, list, opts...)
}

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "ingress.dynamicingress.io", Resource: "dynamicingresses"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"503", apierrors.NewServiceUnavailable("unavailable"), true},
		{"504", apierrors.NewTimeoutError("timeout", 1), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "list", 1), true},
		{"a dropped connection", errDropped, true},
		{"an unexpected EOF", io.ErrUnexpectedEOF, true},
		{"forbidden", forbidden(request{"list", dynamicIngresses, "shop"}), false},
		{"unauthorized", apierrors.NewUnauthorized("token expired"), false},
		{"bad request", apierrors.NewBadRequest("field label not supported"), false},
		{"not found", apierrors.NewNotFound(gr, ""), false},
		{"another error", errors.New("no kind is registered"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transient(tt.err); got != tt.want {
				t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestPermissionError(t *testing.T) {
	err := errors.New("refused")
	tests := []struct {
		name string
		perm PermissionError
		want string
	}{
		{"in a namespace", PermissionError{Command: "wait", Verb: "list", Resource: dynamicIngresses, Namespace: "shop", Err: err},
			`wait needs list on dynamicingresses.ingress.dynamicingress.io in namespace "shop": refused`},
		{"every namespace", PermissionError{Command: "wait", Verb: "watch", Resource: ingresses, Err: err},
			`wait needs watch on ingresses.networking.k8s.io in every namespace (-A; -n NAMESPACE asks in one): refused`},
		{"cluster-scoped", PermissionError{Command: "wait", Verb: "list", Resource: clusterStates, ClusterScoped: true, Err: err},
			`wait needs list on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped): refused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.perm.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
