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
	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy (YAML): the API
	// server then writes the requests it selects to AuditLog, one JSON
	// event per line, so a test can see who wrote what.
	AuditPolicy string
}

// ServiceCIDR is the range of the local clusters' Service ClusterIPs, on
// loopback; the API server takes its first address for the Service
// "kubernetes". A test or the demo that names a ClusterIP (for a local
// server listening there) picks one of 127.0.1.2-127.0.1.16: the API
// server assigns those only when asked for, so none is taken by a Service
// that asked for none. Linux routes all of 127.0.0.0/8 to loopback.
const ServiceCIDR = "127.0.1.0/24"

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
	// AuditLog is the API server's audit log (with Options.AuditPolicy).
	AuditLog string

	dir          string
	env          *envtest.Environment
	apiServerLog *os.File
	kcm          *exec.Cmd
	// kcmDone is closed when kube-controller-manager exits.
	kcmDone chan struct{}
}

// Start starts a local cluster. Stop it with Stop.
func Start(opts Options) (*Cluster, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	env := Environment(opts.Webhooks)
	// The API server keeps its certificates and keys in Dir rather than in
	// a directory of its own that envtest deletes when it stops: restarted
	// with StartAPIServer, it then serves the same certificate, so the
	// kubeconfigs handed out stay valid.
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.CertDir = filepath.Join(opts.Dir, "kube-apiserver")
	env.ControlPlaneStopTimeout = stopTimeout
	if err := os.MkdirAll(apiServer.CertDir, 0o700); err != nil {
		return nil, err
	}
	apiServerLog, err := os.OpenFile(filepath.Join(opts.Dir, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	apiServer.Out, apiServer.Err = apiServerLog, apiServerLog
	// Services get their ClusterIPs from a loopback range (ServiceCIDR):
	// a proxy that sends a Service's requests to its ClusterIP (Traefik's
	// Gateway API provider with native load balancing) then reaches a
	// local server listening there. Nothing else here routes ClusterIPs.
	apiServer.Configure().Set("service-cluster-ip-range", ServiceCIDR)
	c := &Cluster{env: env, dir: opts.Dir, apiServerLog: apiServerLog}
	if opts.AuditPolicy != "" {
		policy := filepath.Join(opts.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(opts.AuditPolicy), 0o600); err != nil {
			_ = apiServerLog.Close()
			return nil, err
		}
		c.AuditLog = filepath.Join(opts.Dir, "audit.log")
		apiServer.Configure().Set("audit-policy-file", policy).Set("audit-log-path", c.AuditLog)
	}
	if _, err := env.Start(); err != nil {
		_ = apiServerLog.Close()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s (run `make envtest-assets`): %w", AssetsDir(), err)
	}
	if opts.Webhooks {
		c.WebhookCertDir, c.WebhookPort = env.WebhookInstallOptions.LocalServingCertDir, env.WebhookInstallOptions.LocalServingPort
	}

	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	if c.Kubeconfig, err = c.writeKubeconfig(admin, "kubeconfig"); err != nil {
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

// AddUser writes a kubeconfig for a new user of the cluster, named name
// and member of system:masters, and returns its path. Processes given
// different users are told apart in the API server's audit log.
func (c *Cluster) AddUser(name string) (string, error) {
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	return c.writeKubeconfig(user, "kubeconfig-"+name)
}

func (c *Cluster) writeKubeconfig(user *envtest.AuthenticatedUser, file string) (string, error) {
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, file)
	return path, os.WriteFile(path, kubeconfig, 0o600)
}

// stopTimeout bounds the graceful shutdown of etcd and kube-apiserver,
// after which they are killed. kube-apiserver stops listening at once, but
// waits for every open watch to end, and clients (kube-controller-manager,
// a manager) keep theirs open for up to 30 minutes: without a bound, every
// stop with a client connected would take envtest's default 20s.
const stopTimeout = 3 * time.Second

// StopAPIServer stops kube-apiserver with SIGTERM (SIGKILL after
// stopTimeout) and leaves etcd and every other process running.
// It returns once nothing answers on the API server's address.
func (c *Cluster) StopAPIServer() error {
	stopErr := c.env.ControlPlane.APIServer.Stop()
	// envtest reports the kill after the timeout as an error, and does not
	// wait for the killed process to end.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", c.APIServerAddress(), time.Second)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver still answers on %s after it was stopped (%v)", c.APIServerAddress(), stopErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address, with the same certificates, flags and etcd (so with the
// same data), and returns once it answers /healthz.
func (c *Cluster) StartAPIServer() error {
	return c.env.ControlPlane.APIServer.Start()
}

// APIServerAddress is where kube-apiserver serves, host:port.
func (c *Cluster) APIServerAddress() string {
	return c.env.ControlPlane.APIServer.HostPort()
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
	if c.apiServerLog != nil {
		_ = c.apiServerLog.Close()
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

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) { return freePort() }
