package config_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// buildManager builds the manager binary into a temporary directory.
func buildManager(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", binary, "./cmd")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	return binary
}

// TestHTTP2IsOffUnlessEnabled runs the built manager and asks its webhook
// and metrics servers (both HTTPS) for HTTP/2 with ALPN, as a client such
// as the API server or Prometheus would: they answer HTTP/1.1 by default,
// and HTTP/2 with --enable-http2.
func TestHTTP2IsOffUnlessEnabled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the manager")
	}
	binary := buildManager(t)
	env := controlplane.Environment(true)
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	webhookAddr := net.JoinHostPort("127.0.0.1", fmt.Sprint(env.WebhookInstallOptions.LocalServingPort))

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"by default", nil, "http/1.1"},
		{"with --enable-http2", []string{"--enable-http2"}, "h2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			metricsAddr := freeAddr(t)
			logPath := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".log")
			mgr, err := controlplane.StartProcess(logPath, binary, append([]string{
				"--kubeconfig=" + kubeconfigPath,
				"--health-probe-bind-address=0",
				"--metrics-bind-address=" + metricsAddr, // HTTPS, a self-signed certificate
				"--webhook-cert-path=" + env.WebhookInstallOptions.LocalServingCertDir,
				fmt.Sprintf("--webhook-port=%d", env.WebhookInstallOptions.LocalServingPort),
			}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				mgr.Stop(10 * time.Second)
				if t.Failed() {
					log, _ := os.ReadFile(logPath)
					t.Logf("manager log:\n%s", log)
				}
			}()
			got := map[string]string{}
			for name, addr := range map[string]string{"webhook server": webhookAddr, "metrics server": metricsAddr} {
				got[name] = negotiatedProtocol(t, addr)
			}
			want := map[string]string{"webhook server": tt.want, "metrics server": tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("protocol chosen by ALPN when a client offers h2 and http/1.1 (-want +got):\n%s", diff)
			}
		})
	}
}

// negotiatedProtocol connects to addr over TLS offering h2 and http/1.1,
// as Go's HTTP client does, and returns the protocol the server chose. It
// waits for the server to listen.
func negotiatedProtocol(t *testing.T, addr string) string {
	t.Helper()
	var proto string
	poll(t, 30*time.Second, "a TLS handshake with "+addr, func() (bool, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
			&tls.Config{NextProtos: []string{"h2", "http/1.1"}, InsecureSkipVerify: true}) //nolint:gosec // the protocol is under test, not the certificate
		if err != nil {
			var opErr *net.OpError
			if errors.As(err, &opErr) && opErr.Op == "dial" {
				return false, nil // not listening yet
			}
			return false, err
		}
		defer func() { _ = conn.Close() }()
		proto = conn.ConnectionState().NegotiatedProtocol
		return true, nil
	})
	return proto
}

// TestOutOfRangeFlagsAreRefusedAtStart runs the built manager with flags
// out of range: it exits at once with status 1 and a message naming each
// flag, before it reaches for a cluster.
func TestOutOfRangeFlagsAreRefusedAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the manager")
	}
	binary := buildManager(t)
	cmd := exec.Command(binary, "--kubeconfig=/nonexistent",
		"--probe-max-body-bytes=70000", "--state-max-concurrent-reconciles=0", "--probe-deny-cidrs=10.0.0.0/33")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("manager exited with %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	want := "Error: " + `--probe-deny-cidrs: invalid CIDR "10.0.0.0/33": netip.ParsePrefix("10.0.0.0/33"): prefix length out of range` + "\n" +
		"--probe-max-body-bytes=70000: must be from 1 to 65536, the longest body a state's status holds\n" +
		"--state-max-concurrent-reconciles=0: must be from 1 to 256\n"
	if diff := cmp.Diff(want, stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
