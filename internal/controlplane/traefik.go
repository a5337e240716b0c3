package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// TraefikVersion is the version of Traefik the Makefile builds (make
// traefik), the data plane of the demo and the end-to-end tests.
const TraefikVersion = "v3.6.12"

// TraefikBinary is the Traefik program: $TRAEFIK when set (the Makefile
// exports it), else where make traefik builds it.
func TraefikBinary() string {
	if path := os.Getenv("TRAEFIK"); path != "" {
		return path
	}
	return filepath.Join(RepoRoot(), "bin", "traefik-"+TraefikVersion)
}

// TraefikOptions say how StartTraefik runs Traefik.
type TraefikOptions struct {
	// Dir receives the static configuration and the logs. Created when missing.
	Dir string
	// Kubeconfig is the kubeconfig Traefik reads Ingresses, Services and
	// IngressClasses with, and with Gateway the Gateway API's objects,
	// whose status it writes (Cluster.Kubeconfig, or one of
	// Cluster.AddUser to tell Traefik's requests apart in the audit log).
	Kubeconfig string
	// Throttle is the least time between two configurations Traefik
	// applies (its providersThrottleDuration); 0 keeps Traefik's default,
	// 2 s.
	Throttle time.Duration
	// Gateway also runs Traefik's Gateway API provider: it serves the
	// HTTPRoutes attached to a Gateway of a GatewayClass naming
	// TraefikGatewayController whose listener has the port of Address,
	// and writes their status as a gateway does.
	Gateway bool
}

// TraefikGatewayController is the controllerName of a GatewayClass that
// Traefik's Gateway API provider serves.
const TraefikGatewayController = "traefik.io/gateway-controller"

// Traefik is a Traefik process serving the cluster's Ingresses (and with
// TraefikOptions.Gateway, its Gateways' HTTPRoutes) on loopback.
type Traefik struct {
	// Address is where Traefik serves HTTP (its entry point "web"),
	// 127.0.0.1:port.
	Address string
	// port is Address's port.
	port int32
	// Log is Traefik's own log and AccessLog its access log, one line per
	// request.
	Log, AccessLog string

	process *Process
}

// StartTraefik starts Traefik (TraefikBinary) on loopback with its
// Kubernetes Ingress provider (and with opts.Gateway its Gateway API
// provider) reading the cluster of opts.Kubeconfig, and returns once it
// answers its ping endpoint; stop it with Stop.
//
// Traefik serves the Ingresses without an ingressClassName, and those whose
// IngressClass names the controller traefik.io/ingress-controller. It
// applies what it reads at most every 2 s (its default
// providersThrottleDuration, unless opts.Throttle says otherwise), as in a
// real installation.
//
// Backends of Ingresses are Services of type ExternalName naming 127.0.0.1
// (Traefik runs with allowExternalNameServices): Traefik then sends a
// request to 127.0.0.1 on the Service's port. With opts.Gateway, Traefik
// also serves HTTPRoutes; its Gateway API provider refuses ExternalName
// Services, so their backends are ClusterIP Services whose ClusterIP is a
// loopback address (ServiceCIDR) marked for native load balancing, where
// Traefik sends to the ClusterIP and the Service's port. Nothing runs the
// EndpointSlice controller here, and the API server refuses loopback
// addresses in EndpointSlices (FQDN ones need two labels, and no such name
// resolves to loopback here).
func StartTraefik(opts TraefikOptions) (*Traefik, error) {
	binary := TraefikBinary()
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("no Traefik at %s (run `make traefik`): %w", binary, err)
	}
	if opts.Kubeconfig == "" {
		return nil, errors.New("starting Traefik: no kubeconfig")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	// A free port may be taken by another process before Traefik binds
	// it (tests start servers beside each other): then Traefik exits at
	// once, and a new pair of ports is tried.
	var err error
	for attempt := 1; ; attempt++ {
		var t *Traefik
		t, err = startTraefikOnce(binary, opts)
		if err == nil {
			return t, nil
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
}

// errPortTaken is why Traefik exited at its start when one of its ports
// was taken meanwhile.
var errPortTaken = errors.New("a port of Traefik was taken before it bound it")

// startTraefikOnce is StartTraefik on one pair of free ports.
func startTraefikOnce(binary string, opts TraefikOptions) (*Traefik, error) {
	webPort, err := freePort()
	if err != nil {
		return nil, err
	}
	pingPort, err := freePort()
	if err != nil {
		return nil, err
	}
	t := &Traefik{
		Address:   net.JoinHostPort("127.0.0.1", strconv.Itoa(webPort)),
		port:      int32(webPort),
		Log:       filepath.Join(opts.Dir, "traefik.log"),
		AccessLog: filepath.Join(opts.Dir, "traefik-access.log"),
	}
	pingAddress := net.JoinHostPort("127.0.0.1", strconv.Itoa(pingPort))
	config, err := yaml.Marshal(traefikStaticConfig(t.Address, pingAddress, t.Log, t.AccessLog, opts))
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(opts.Dir, "traefik.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, err
	}
	t.process, err = StartProcessWith(ProcessOptions{Env: traefikEnv(opts.Kubeconfig)},
		filepath.Join(opts.Dir, "traefik.out"), binary, "--configFile="+configPath)
	if err != nil {
		return nil, err
	}
	if err := t.waitForPing(pingAddress, 30*time.Second); err != nil {
		t.Stop()
		log, _ := os.ReadFile(t.Log)
		out, _ := os.ReadFile(filepath.Join(opts.Dir, "traefik.out"))
		if strings.Contains(string(log)+string(out), "address already in use") {
			return nil, fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w\nTraefik's log:\n%s%s", err, log, out)
	}
	return t, nil
}

// traefikStaticConfig is Traefik's static configuration: the entry point
// web on address, its ping endpoint alone on pingAddress, the Kubernetes
// Ingress provider (and the Gateway API provider with opts.Gateway), logs
// to files and no request to the internet (no version check, no usage
// report), with opts.Throttle between two applied configurations unless
// it is 0.
func traefikStaticConfig(address, pingAddress, logPath, accessLogPath string, opts TraefikOptions) map[string]any {
	// Traefik waits 10 s by default for open connections when it stops;
	// a test's keep-alive connections would hold every Stop that long.
	quickShutdown := map[string]any{"lifeCycle": map[string]any{"graceTimeOut": "1s"}}
	providers := map[string]any{
		"kubernetesIngress": map[string]any{"allowExternalNameServices": true},
	}
	if opts.Gateway {
		providers["kubernetesGateway"] = map[string]any{}
	}
	if opts.Throttle > 0 {
		providers["providersThrottleDuration"] = opts.Throttle.String()
	}
	return map[string]any{
		"global": map[string]any{"checkNewVersion": false, "sendAnonymousUsage": false},
		"entryPoints": map[string]any{
			"web":     map[string]any{"address": address, "transport": quickShutdown},
			"traefik": map[string]any{"address": pingAddress, "transport": quickShutdown},
		},
		"ping":      map[string]any{"entryPoint": "traefik"},
		"providers": providers,
		"log":       map[string]any{"level": "INFO", "filePath": logPath},
		"accessLog": map[string]any{"filePath": accessLogPath},
	}
}

// traefikEnv is our environment for Traefik with KUBECONFIG set, which its
// Kubernetes providers read (its static configuration has no place for a
// client certificate), and without KUBERNETES_SERVICE_HOST and _PORT, which
// would make them use the in-cluster configuration of a pod the tests run in.
func traefikEnv(kubeconfig string) []string {
	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitForPing returns once Traefik answers 200 on /ping, or fails when it
// exits or the timeout passes.
func (t *Traefik) waitForPing(pingAddress string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(timeout)
	for {
		if t.process.Exited() {
			return fmt.Errorf("traefik exited: %v; see %s and %s", t.process.Err(), t.Log, filepath.Join(filepath.Dir(t.Log), "traefik.out"))
		}
		resp, err := client.Get("http://" + pingAddress + "/ping")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("traefik did not answer on http://%s/ping within %s (last error: %v); see %s", pingAddress, timeout, err, t.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops Traefik (SIGTERM, SIGKILL after 5 s).
func (t *Traefik) Stop() {
	t.process.Stop(5 * time.Second)
}

// Port is the port of Address: the port a Gateway's listener names for
// Traefik's Gateway API provider to serve it on the entry point web.
func (t *Traefik) Port() int32 { return t.port }
