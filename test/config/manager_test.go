package config_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// TestManagerRunsWithTheBundlesRBAC runs the built manager as the bundle's
// ServiceAccount, with exactly the bundle's RBAC, and checks what an
// operator of the cluster sees: a leader in the Lease and an Event saying
// so, both kinds of switch and a state admitted by its webhooks and
// reconciled (statuses written, targets created, changed and deleted) with
// nothing refused, metrics refused to anonymous and unauthorized clients
// and served to a client bound to metrics-reader, and the Lease released
// at once when the leader stops, so that a standby takes over without
// waiting for it to expire.
func TestManagerRunsWithTheBundlesRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the manager")
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", binary, "./cmd")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}

	// With the webhooks: they read targets and dry-run them as the
	// manager's ServiceAccount too.
	env := controlplane.Environment(true)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The bundle's namespace and RBAC, for real (the CRDs are installed).
	objs := render(t)
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	ns, sa := deploy.Namespace, deploy.Spec.Template.Spec.ServiceAccountName
	admin := newAdmin(t, cfg)
	for _, kinds := range [][]string{{"Namespace"}, {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}} {
		for _, o := range objs {
			if slices.Contains(kinds, o.GetKind()) {
				if err := admin.Create(ctx, o.DeepCopy()); err != nil {
					t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		}
	}

	// The manager authenticates as its ServiceAccount's user name (a
	// client certificate for it: RBAC matches ServiceAccount subjects by
	// that name), so it has the bundle's permissions and no others.
	user, err := env.AddUser(envtest.User{
		Name:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	logPath := filepath.Join(dir, "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	mgr := exec.Command(binary,
		"--kubeconfig="+kubeconfigPath,
		"--leader-elect",
		"--leader-election-namespace="+ns, // the pod's namespace in a cluster
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+healthAddr,
		"--webhook-cert-path="+env.WebhookInstallOptions.LocalServingCertDir,
		fmt.Sprintf("--webhook-port=%d", env.WebhookInstallOptions.LocalServingPort),
	)
	mgr.Stdout, mgr.Stderr = logFile, logFile
	mgr.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := mgr.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- mgr.Wait() }()
	defer func() {
		_ = mgr.Process.Kill()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("manager log:\n%s", log)
		}
	}()

	// A leader in the Lease, and the Event announcing it.
	var holder string
	poll(t, 60*time.Second, "the manager to hold the Lease", func() (bool, error) {
		lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "", nil
	})
	poll(t, 30*time.Second, "a LeaderElection Event on the Lease", func() (bool, error) {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" && strings.Contains(e.Message, holder) {
				return true, nil
			}
		}
		return false, nil
	})

	// The webhooks and the controllers, with the role and nothing more.
	exerciseEveryKind(t, cfg)

	// Metrics: HTTPS, and only for a client allowed to get /metrics.
	scraper := serviceAccountToken(t, cs, ns, "scraper")
	stranger := serviceAccountToken(t, cs, ns, "stranger")
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-reads-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dynamic-ingress-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		// controller-runtime's filter answers 500 "Authentication failed"
		// when the TokenReview rejects the token, and logs "invalid bearer
		// token": refused all the same.
		{"a token the API server did not issue", "not-a-token", http.StatusInternalServerError},
		{"a ServiceAccount not bound to metrics-reader", stranger, http.StatusForbidden},
		{"a ServiceAccount bound to metrics-reader", scraper, http.StatusOK},
	}
	var got, want []string
	for _, tt := range tests {
		want = append(want, fmt.Sprintf("%s: %d", tt.name, tt.want))
		got = append(got, fmt.Sprintf("%s: %d", tt.name, scrape(t, metricsAddr, tt.token)))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET https://%s/metrics (-want +got):\n%s", metricsAddr, diff)
	}

	// A clean stop (SIGTERM, as the kubelet sends) releases the Lease and
	// exits: a standby would take it over within its retry period.
	if err := mgr.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("manager exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("manager still running 25s after SIGTERM")
	}
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("after the leader stopped, the Lease is still held by %q (until %s): a standby waits for it to expire", *h, leaseExpiry(lease))
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := forbiddenLines(string(log)); len(lines) > 0 {
		t.Errorf("the API server refused the manager something its code does:\n%s", strings.Join(lines, "\n"))
	}
}

// scrape returns the status of GET /metrics with a bearer token ("" for
// none). The manager's certificate is self-signed.
func scrape(t *testing.T, addr, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var status int
	poll(t, 30*time.Second, "the metrics endpoint to answer", func() (bool, error) {
		resp, err := c.Do(req)
		if err != nil {
			var opErr *net.OpError
			if errors.As(err, &opErr) && opErr.Op == "dial" {
				return false, nil // not listening yet
			}
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		status = resp.StatusCode
		if status == http.StatusOK && !strings.Contains(string(body), "# TYPE ") {
			return false, fmt.Errorf("200 without metrics: %.200s", body)
		}
		return true, nil
	})
	return status
}

// serviceAccountToken creates a ServiceAccount and returns a token for it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s: %v", name, err)
	}
	return tr.Status.Token
}

func leaseExpiry(l *coordinationv1.Lease) string {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return "unknown"
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Format(time.RFC3339)
}

// poll calls f until it returns true, fails the test on its error or
// after timeout.
func poll(t *testing.T, timeout time.Duration, what string, f func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return f() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// freeAddr returns a free local address to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// newAdmin returns a client with the envtest admin's rights.
func newAdmin(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
