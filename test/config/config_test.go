// Package config_test renders config/default as `kubectl apply -k` would and
// checks the install bundle: the webhook serving certificate from
// cert-manager fits the Service, the Secret and the CA injection; the
// manager runs highly available and serves its metrics to authorized
// scrapers only; the optional ServiceMonitor finds them; every object is
// accepted by a real API server that has cert-manager's and
// prometheus-operator's CRDs; and the built manager, given exactly the
// bundle's RBAC, elects a leader, hands the Lease over on shutdown and
// guards its metrics. The Grafana dashboard names only exported metrics.
package config_test

import (
	"context"
	"slices"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// render builds config/default into unstructured objects.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return bundle.Kustomize(t, bundle.DefaultDir())
}

// The names config/default gives the objects this test looks at.
const (
	bundleNamespace    = "dynamic-ingress-operator-system"
	webhookServiceName = "dynamic-ingress-operator-webhook-service"
	metricsServiceName = "dynamic-ingress-operator-controller-manager-metrics-service"
	leaseName          = "dynamic-ingress-operator.ingress.dynamicingress.io"
)

func TestDefaultBundleWiresCertManager(t *testing.T) {
	objs := render(t)
	cert := suite.Named[certmanagerv1.Certificate](t, objs, "Certificate", "dynamic-ingress-operator-serving-cert")
	svc := suite.Named[corev1.Service](t, objs, "Service", webhookServiceName)
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	mutating := suite.Only[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration")
	validating := suite.Only[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration")

	// The Certificate is issued by the bundle's CA Issuer, from its
	// self-signed CA, and names the Service.
	suite.CheckCAChain(t, objs, cert)
	for _, want := range []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"} {
		if !slices.Contains(cert.Spec.DNSNames, want) {
			t.Errorf("Certificate DNS names %v do not cover %s", cert.Spec.DNSNames, want)
		}
	}

	// The manager mounts the Certificate's Secret where --webhook-cert-path points.
	pod := deploy.Spec.Template.Spec
	var secretVolume string
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == cert.Spec.SecretName {
			secretVolume = v.Name
		}
	}
	if secretVolume == "" {
		t.Fatalf("the manager mounts no volume of the Certificate's Secret %q (volumes %+v)", cert.Spec.SecretName, pod.Volumes)
	}
	manager := pod.Containers[0]
	var mountPath string
	for _, m := range manager.VolumeMounts {
		if m.Name == secretVolume {
			mountPath = m.MountPath
		}
	}
	if want := "--webhook-cert-path=" + mountPath; mountPath == "" || !slices.Contains(manager.Args, want) {
		t.Errorf("manager args %v, mounts %+v: want %s", manager.Args, manager.VolumeMounts, want)
	}
	// The Service reaches the manager's webhook port.
	var webhookPort int32
	for _, p := range manager.Ports {
		if p.Name == svc.Spec.Ports[0].TargetPort.String() {
			webhookPort = p.ContainerPort
		}
	}
	if webhookPort != 9443 {
		t.Errorf("Service targetPort %q is not the manager's webhook port 9443 (ports %+v)", svc.Spec.Ports[0].TargetPort.String(), manager.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if deploy.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the manager pod (labels %v)", k, v, deploy.Spec.Template.Labels)
		}
	}

	// Both webhook configurations take their CA from that Certificate and
	// call that Service, fail closed, and match only our two kinds.
	inject := cert.Namespace + "/" + cert.Name
	type hook struct {
		name   string
		cfg    admissionregistrationv1.WebhookClientConfig
		policy *admissionregistrationv1.FailurePolicyType
		side   *admissionregistrationv1.SideEffectClass
		tmo    *int32
		rules  []admissionregistrationv1.RuleWithOperations
	}
	var hooks []hook
	for _, w := range mutating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, w.Rules})
	}
	for _, w := range validating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.ClientConfig, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, w.Rules})
	}
	if len(hooks) != 10 {
		t.Errorf("%d webhooks, want 10 (mutating and validating, five kinds)", len(hooks))
	}
	for _, annotations := range []map[string]string{mutating.Annotations, validating.Annotations} {
		if got := annotations["cert-manager.io/inject-ca-from"]; got != inject {
			t.Errorf("cert-manager.io/inject-ca-from = %q, want %q", got, inject)
		}
	}
	for _, h := range hooks {
		if s := h.cfg.Service; s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace {
			t.Errorf("webhook %s calls %+v, want Service %s/%s", h.name, s, svc.Namespace, svc.Name)
		}
		if h.policy == nil || *h.policy != admissionregistrationv1.Fail {
			t.Errorf("webhook %s failurePolicy %v, want Fail", h.name, h.policy)
		}
		if h.side == nil || *h.side != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("webhook %s sideEffects %v, want None", h.name, h.side)
		}
		if h.tmo == nil || *h.tmo < 1 || *h.tmo > 10 {
			t.Errorf("webhook %s timeoutSeconds %v, want a few seconds", h.name, h.tmo)
		}
		for _, r := range h.rules {
			if !slices.Equal(r.APIGroups, []string{"ingress.dynamicingress.io"}) || len(r.Resources) != 1 ||
				!slices.Contains([]string{"dynamicingresses", "dynamichttproutes", "dynamicingressstates", "clusterdynamicingressstates", "dynamicingressnotifiers"}, r.Resources[0]) {
				t.Errorf("webhook %s matches %v %v, want only our kinds", h.name, r.APIGroups, r.Resources)
			}
		}
	}
}

// TestDefaultBundleDryRunApplies applies every rendered object with a
// server-side dry run to an API server that has cert-manager's and
// prometheus-operator's CRDs: config/default with its ServiceMonitor turned
// on, which is config/default plus that one object.
func TestDefaultBundleDryRunApplies(t *testing.T) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{bundle.CertManagerCRDDir(t), bundle.ServiceMonitorCRDFile(t)},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: controlplane.AssetsDir(),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	objs := bundle.Kustomize(t, bundle.DefaultDirWithMonitor(t))
	var withoutMonitor []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "ServiceMonitor" {
			withoutMonitor = append(withoutMonitor, o)
		}
	}
	if diff := cmp.Diff(render(t), withoutMonitor); diff != "" {
		t.Fatalf("turning the ServiceMonitor on changed other objects of config/default (-default +with the monitor):\n%s", diff)
	}
	// Namespaces and CRDs for real first: a dry run does not create what
	// the other objects need to exist.
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			if err := c.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("config-test"), client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("server-side dry-run apply of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	for _, want := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "Issuer", "Certificate", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ServiceMonitor"} {
		if !kinds[want] {
			t.Errorf("config/default with the ServiceMonitor has no %s", want)
		}
	}
}
