package config_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// TestNamespacedModeStaysInItsNamespaces installs the chart's RBAC for
// watchNamespaces=[watched] (Roles there, and the one cluster-scoped rule
// kept in a ClusterRole), runs the built manager as its ServiceAccount
// with the args the chart gives it, and checks that a switch in the
// watched namespace gets its Ingress and is Ready, that the same switch
// in another namespace is left alone (no Ingress, no status), and that
// nothing the manager asked for was refused.
func TestNamespacedModeStaysInItsNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the manager")
	}
	binary := buildManager(t)
	env := controlplane.Environment(false)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}

	const release, releaseNS, watched, other = "dynamic-ingress-operator", "operators", "shop", "elsewhere"
	objs, err := bundle.TryRenderChart(t, release, releaseNS, map[string]any{
		"watchNamespaces": []any{watched},
		"webhook":         map[string]any{"enabled": false},
		"metrics":         map[string]any{"enabled": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{releaseNS, watched, other} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	var sa string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if strings.HasSuffix(o.GetName(), "-manager-role") || strings.HasSuffix(o.GetName(), "-manager-rolebinding") ||
				strings.Contains(o.GetName(), "leader-election") {
				break
			}
			continue
		default:
			continue
		}
		if err := admin.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatalf("creating %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	var args []string
	for _, c := range suite.Only[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			args = c.Args
		}
	}
	if !slices.Contains(args, "--namespaces="+watched) {
		t.Fatalf("the chart's manager args %v do not watch %s alone", args, watched)
	}

	user, err := env.AddUser(envtest.User{
		Name:   "system:serviceaccount:" + releaseNS + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigPath, logPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "manager.log")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	// The chart's args, but where a pod would find its namespace and
	// ports: outside a cluster they are given.
	mgrArgs := []string{"--kubeconfig=" + kubeconfigPath, "--leader-election-namespace=" + releaseNS, "--health-probe-bind-address=" + freeAddr(t)}
	for _, a := range args {
		if !strings.HasPrefix(a, "--health-probe-bind-address=") && !strings.HasPrefix(a, "--webhook-cert-path=") {
			mgrArgs = append(mgrArgs, a)
		}
	}
	mgr := exec.Command(binary, mgrArgs...)
	mgr.Stdout, mgr.Stderr = logFile, logFile
	mgr.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = mgr.Process.Kill()
		_ = mgr.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("manager args %v, log:\n%s", mgrArgs, log)
		}
	}()

	// The same state and switch in both namespaces, the unwatched one first.
	switches := map[string]*v1beta1.DynamicIngress{}
	states := map[string]*v1beta1.DynamicIngressState{}
	for _, ns := range []string{other, watched} {
		states[ns] = builders.FixedState(ns, "flag", "200", "").Obj()
		switches[ns] = builders.DynamicIngress(ns, "site").State("flag").ExpectCode("200").
			Active(builders.IngressTo("site.example.com", "web")).Obj()
		for _, o := range []client.Object{states[ns], switches[ns]} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s/%s: %v", o, ns, o.GetName(), err)
			}
		}
	}

	poll(t, 60*time.Second, "the watched namespace's switch Ready with its Ingress", func() (bool, error) {
		di := switches[watched]
		if err := admin.Get(ctx, client.ObjectKeyFromObject(di), di); err != nil || !meta.IsStatusConditionTrue(di.Status.Conditions, v1beta1.ConditionReady) {
			return false, err
		}
		return admin.Get(ctx, client.ObjectKey{Namespace: watched, Name: "site"}, &networkingv1.Ingress{}) == nil, nil
	})
	// The other namespace's objects were there first; give the manager a
	// moment more to (wrongly) act on them.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: other, Name: "site"}, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the Ingress of the switch in %s, which the manager does not watch: got error %v, want NotFound", other, err)
		}
		di, state := switches[other], states[other]
		if err := admin.Get(ctx, client.ObjectKeyFromObject(di), di); err != nil {
			t.Fatal(err)
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
			t.Fatal(err)
		}
		if len(di.Status.Conditions) > 0 || state.Status.StatusCode != "" {
			t.Fatalf("the manager wrote status in %s, which it does not watch: switch %+v, state %+v", other, di.Status, state.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := forbiddenLines(string(log)); len(lines) > 0 {
		t.Errorf("the API server refused the manager something its code does:\n%s", strings.Join(lines, "\n"))
	}
}
