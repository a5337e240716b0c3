package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options configure a local cluster.
type Options struct {
	// Dir receives the kubeconfig and logs. Created when missing.
	Dir string
	// Webhooks installs the webhook configurations of config/webhook,
	// pointed at a local serving address with a locally generated CA and
	// serving certificate (WebhookCertDir, WebhookPort).
	Webhooks bool
	// GarbageCollector runs kube-controller-manager with only the garbage
	// collector and the namespace controller, so that deleting an owner
	// deletes what it owns and deleting a namespace empties it.
	GarbageCollector bool
}

// Cluster is a local control plane: etcd and kube-apiserver (through
// envtest), with the CRDs installed, an admin kubeconfig and, on demand,
// kube-controller-manager running the garbage collector.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig file for kubectl and the manager.
	Kubeconfig string
	// WebhookCertDir holds tls.crt and tls.key for the webhook server, and
	// WebhookPort is where the API server expects it, on 127.0.0.1.
	WebhookCertDir string
	WebhookPort    int

	env *envtest.Environment
	kcm *exec.Cmd
	// kcmDone is closed when kube-controller-manager exits.
	kcmDone chan struct{}
}

// Start starts a local cluster. Stop it with Stop.
func Start(opts Options) (*Cluster, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	env := Environment(opts.Webhooks)
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s (run `make envtest-assets`): %w", AssetsDir(), err)
	}
	c := &Cluster{env: env}
	if opts.Webhooks {
		c.WebhookCertDir, c.WebhookPort = env.WebhookInstallOptions.LocalServingCertDir, env.WebhookInstallOptions.LocalServingPort
	}

	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	c.Kubeconfig = filepath.Join(opts.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if opts.GarbageCollector {
		if err := c.startGarbageCollector(opts.Dir); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// startGarbageCollector runs kube-controller-manager with the garbage
// collector and the namespace controller only.
func (c *Cluster) startGarbageCollector(dir string) error {
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.kcm = exec.Command(filepath.Join(AssetsDir(), "kube-controller-manager"),
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--controllers=garbagecollector,namespace",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(dir, "kcm-certs"),
	)
	c.kcm.Stdout, c.kcm.Stderr = logFile, logFile
	c.kcm.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := c.kcm.Start(); err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	c.kcmDone = make(chan struct{})
	go func() { _ = c.kcm.Wait(); _ = logFile.Close(); close(c.kcmDone) }()
	return nil
}

// Stop stops every process of the cluster.
func (c *Cluster) Stop() error {
	var errs []error
	if c.kcm != nil && c.kcm.Process != nil {
		_ = c.kcm.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.kcmDone:
		case <-time.After(10 * time.Second):
			_ = c.kcm.Process.Kill()
			<-c.kcmDone
		}
	}
	if c.env != nil {
		errs = append(errs, c.env.Stop())
	}
	return errors.Join(errs...)
}

// WaitForGarbageCollector returns once kube-controller-manager has been
// running for a moment, or fails when it exits.
func (c *Cluster) WaitForGarbageCollector(ctx context.Context) error {
	if c.kcm == nil {
		return errors.New("the garbage collector was not started")
	}
	select {
	case <-c.kcmDone:
		return errors.New("kube-controller-manager exited; see kube-controller-manager.log")
	case <-time.After(2 * time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
