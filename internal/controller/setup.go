// Package controller wires the manager's reconcilers together: the
// options, the cache configuration, and the shared machinery handed to the
// state, switch and notifier reconcilers (packages states, switches and
// notifiers), which import none of each other (docs/architecture.md).
package controller

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller/notifiers"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller/states"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller/switches"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/endpoints"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/evaluate"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/secrets"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

// Options configure both controllers.
type Options struct {
	// Guard refuses probe connections to denied addresses.
	Guard probe.Guard
	// MaxBodyBytes is the longest probed body kept in a state's status.
	MaxBodyBytes int64
	// MaxConcurrentReconciles of each switch controller (DynamicIngress,
	// DynamicHTTPRoute).
	MaxConcurrentReconciles int
	// StateMaxConcurrentReconciles of the DynamicIngressState controller.
	StateMaxConcurrentReconciles int
	// Clock drives probes, schedules and timestamps; the real clock when
	// nil.
	Clock Clock
	// SecretRotationWindow is how soon a probe uses a rotated value of a
	// header read from a Secret, for a state probed at least that often;
	// 30s when zero (docs/security.md).
	SecretRotationWindow time.Duration
	// HTTPRoutes runs the DynamicHTTPRoute controller: set it when the
	// cluster serves HTTPRoutes (ServesHTTPRoutes), and the cache with
	// CacheOptions(true, ...).
	HTTPRoutes bool
	// ClusterStates runs the ClusterDynamicIngressState controller and
	// lets switches follow cluster states: it needs read and status access
	// to them and read access to Namespaces' metadata. Without it a switch
	// that follows a cluster state is Ready=False/ClusterStatesNotWatched.
	ClusterStates bool
	// ClusterResourceNamespace is where the Secrets of cluster states'
	// probe headers are.
	ClusterResourceNamespace string
	// FlipStalledAfter is how long after a change of a state its
	// notifiers send FlipStalled when not every follower shows it;
	// DefaultFlipStalledAfter when zero (--flip-stalled-after).
	FlipStalledAfter time.Duration
	// Namespaces the manager watches; every namespace when empty. Service
	// states count the endpoints of Services in these namespaces only.
	Namespaces []string
	// Working, when set, is called at the start of every switch's
	// reconcile (memory.Rest.Wake).
	Working func()
}

// DefaultFlipStalledAfter is --flip-stalled-after's default.
const DefaultFlipStalledAfter = notifiers.DefaultFlipStalledAfter

// Clock is what the controllers need of a clock: tickers for probes and
// timers for schedule boundaries (states.Clock).
type Clock = states.Clock

// CacheOptions restricts the manager's cache of Ingresses and, when the
// cluster serves them (see ServesHTTPRoutes), HTTPRoutes to the ones the
// operator manages, so that its memory does not grow with the routes of
// everyone else; and it drops from every cached switch, state and target
// what the reconcilers never read (stripSwitch, stripTarget), so that it
// grows as little as it can with the operator's own.
func CacheOptions(httpRoutes, clusterStates bool) cache.Options {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{v1beta1.LabelManagedBy: v1beta1.ManagedByValue}), Transform: writes.StripTarget}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&networkingv1.Ingress{}:        managed,
		&v1beta1.DynamicIngress{}:      {Transform: writes.StripSwitch},
		&v1beta1.DynamicIngressState{}: {Transform: writes.StripSwitch},
	}}
	if clusterStates {
		opts.ByObject[&v1beta1.ClusterDynamicIngressState{}] = cache.ByObject{Transform: writes.StripSwitch}
	}
	if httpRoutes {
		opts.ByObject[&gatewayv1.HTTPRoute{}] = managed
		opts.ByObject[&v1beta1.DynamicHTTPRoute{}] = cache.ByObject{Transform: writes.StripSwitch}
	}
	return opts
}

// ServesHTTPRoutes reports whether the cluster serves the Gateway API's
// gateway.networking.k8s.io/v1 HTTPRoute: the Gateway API CRDs are
// optional, and without them the DynamicHTTPRoute controller is off until
// the manager restarts.
func ServesHTTPRoutes(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	gvk := target.HTTPRoute{}.TargetGVK()
	resources, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for the %s API: %w", gvk.GroupVersion(), err)
	}
	for _, r := range resources.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}

// SetupWithManager registers the field indexes, the state controller, and
// the switching engine for DynamicIngresses and, when the cluster has the
// Gateway API, DynamicHTTPRoutes.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := index.Setup(ctx, mgr.GetCache()); err != nil {
		return fmt.Errorf("registering field indexes: %w", err)
	}
	// One set of evaluation slots, shared in turn between namespaces, for
	// body expressions and expected expressions (docs/behaviour.md, "Fair
	// shares").
	turns := probe.NewEvaluationTurns()
	expressions := evaluate.NewEvaluator(turns)
	if err := mgr.Add(expressions); err != nil {
		return fmt.Errorf("setting up the expression evaluator: %w", err)
	}
	secretValues := secrets.NewReader(mgr.GetAPIReader(), opts.SecretRotationWindow)
	stateEngine := states.NewReconciler(mgr.GetClient(), mgr.GetEventRecorder("dynamicingressstate-controller"),
		opts.Clock, probe.NewProber(opts.Guard, opts.MaxBodyBytes).WithSecrets(secretValues).WithEvaluationTurns(turns))
	stateEngine.MaxConcurrentReconciles = opts.StateMaxConcurrentReconciles
	stateEngine.ClusterResourceNamespace = opts.ClusterResourceNamespace
	// Service states count ready endpoints from a projection of the
	// cluster's EndpointSlices (docs/behaviour.md, "A state that follows a
	// Service").
	stateEngine.Endpoints = endpoints.NewTracker()
	stateEngine.Endpoints.Notify = stateEngine.ServiceChanged
	serviceWatch, err := endpoints.NewWatch(mgr.GetConfig(), stateEngine.Endpoints, opts.Namespaces)
	if err != nil {
		return fmt.Errorf("setting up the watch of Services and EndpointSlices: %w", err)
	}
	if err := mgr.Add(serviceWatch); err != nil {
		return fmt.Errorf("setting up the watch of Services and EndpointSlices: %w", err)
	}
	if err := stateEngine.SetupWithManager(ctx, mgr, opts.ClusterStates); err != nil {
		return fmt.Errorf("setting up the state controllers: %w", err)
	}
	if !opts.ClusterStates {
		ctrl.LoggerFrom(ctx).WithName("setup").Info("ClusterDynamicIngressStates are not followed: the manager was started with --cluster-states=false (namespaced mode without the chart's clusterStates.followInNamespacedMode)")
	}
	gate := flip.NewGate(clock.RealClock{}, flip.MaxStatusHold)
	events := flip.NewPacer(gate)
	if err := mgr.Add(events); err != nil {
		return fmt.Errorf("setting up the event pacer: %w", err)
	}
	// Switches' spec.served checks, through the same address guard as
	// probes (docs/behaviour.md, "Served").
	checks := served.NewChecks(probe.NewProber(opts.Guard, opts.MaxBodyBytes).WithSecrets(secretValues).WithEvaluationTurns(turns), turns)
	checks.Busy = gate.TargetsPending
	gate.OnTargetsWritten(checks.TargetsWritten)
	if err := mgr.Add(checks); err != nil {
		return fmt.Errorf("setting up the served checks: %w", err)
	}
	// Each change of a state is followed until its followers show it,
	// for the flip summary of its history entry.
	flips := flip.NewTracker(1, time.Now)
	flips.Notify = stateEngine.Notify
	stateEngine.Flips = flips
	if err := setupSwitches(mgr, target.Ingress{}, opts, gate, expressions, checks, flips); err != nil {
		return fmt.Errorf("setting up the DynamicIngress controller: %w", err)
	}
	if err := setupNotifiers(mgr, opts, secretValues, flips); err != nil {
		return fmt.Errorf("setting up the DynamicIngressNotifier controller: %w", err)
	}
	if !opts.HTTPRoutes {
		ctrl.LoggerFrom(ctx).WithName("setup").Info("The DynamicHTTPRoute controller is off: the cluster has no gateway.networking.k8s.io/v1 HTTPRoute API; install the Gateway API CRDs and restart the manager")
		return nil
	}
	routes, err := httpRouteKind(ctx, mgr)
	if err != nil {
		return err
	}
	flips.Engines = 2
	if err := setupSwitches(mgr, routes, opts, gate, expressions, checks, flips); err != nil {
		return fmt.Errorf("setting up the DynamicHTTPRoute controller: %w", err)
	}
	return nil
}

// sinkAnswerBytes is how much of a sink's answer is read: only its status
// code matters.
const sinkAnswerBytes = 4 << 10

// setupNotifiers registers the notifier controller: its notifications go
// through the probes' address guard and read header values from Secrets
// as probes do (docs/notifications.md).
func setupNotifiers(mgr ctrl.Manager, opts Options, secretValues *secrets.Reader, flips *flip.Tracker) error {
	stalled := opts.FlipStalledAfter
	if stalled <= 0 {
		stalled = notifiers.DefaultFlipStalledAfter
	}
	r := &notifiers.Reconciler{
		Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Sender:       probe.NewProber(opts.Guard, sinkAnswerBytes).WithSecrets(secretValues),
		StalledAfter: stalled, ClusterStates: opts.ClusterStates, Switches: []target.Kind{target.Ingress{}},
		Flips: flips,
	}
	if opts.HTTPRoutes {
		r.Switches = append(r.Switches, target.HTTPRoute{})
	}
	return r.SetupWithManager(mgr)
}

// setupSwitches registers the switching engine for one kind.
func setupSwitches(mgr ctrl.Manager, kind target.Kind, opts Options, gate *flip.Gate, expressions *evaluate.Evaluator, checks *served.Checks, flips *flip.Tracker) error {
	r, err := switches.NewReconciler(mgr, kind, opts.Clock, opts.MaxConcurrentReconciles, gate)
	if err != nil {
		return err
	}
	r.ClusterStates = opts.ClusterStates
	r.Expressions = expressions
	r.Served = checks
	r.Flips = flips
	r.Working = opts.Working
	return r.SetupWithManager(mgr)
}

// httpRouteKind returns the HTTPRoute adapter with the defaults of the
// cluster's HTTPRoute CRD.
func httpRouteKind(ctx context.Context, mgr ctrl.Manager) (target.HTTPRoute, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: target.HTTPRouteCRDName}, crd); err != nil {
		// Without the schema, a route whose template leaves out a field
		// the server defaults is applied again at each reconcile: correct,
		// but not free.
		ctrl.LoggerFrom(ctx).WithName("setup").Error(err, "Could not read the HTTPRoute CRD; its defaults are not known", "crd", target.HTTPRouteCRDName)
		crd = nil
	}
	return target.NewHTTPRoute(crd)
}

// NewScheme returns a scheme with the built-in kinds and this project's.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(gatewayv1.Install(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	return scheme
}
