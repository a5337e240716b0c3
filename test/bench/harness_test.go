package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// harness is one local control plane with the clients, the manager binary
// and the readings every measure uses.
type harness struct {
	dir     string
	cluster *controlplane.Cluster
	// cfg is the admin config without a client-side rate limit (QPS -1), so
	// that what the bench does is bounded by the API server only.
	cfg *rest.Config
	// cs speaks JSON, like the manager; watchCS protobuf, so that watching
	// thousands of Ingresses costs the bench little CPU.
	cs      kubernetes.Interface
	watchCS kubernetes.Interface
	// c reads and writes this project's kinds, and watches them.
	c            client.WithWatch
	kubectl      controlplane.Kubectl
	kubectlCache string
	managerBin   string
	// managerFlags are the flags the manager binary knows, from its -h.
	managerFlags map[string]bool
	// webhookConfigs are the webhook configurations envtest installed; they
	// are removed at start and put back only for the webhook measure.
	mutating   []admissionregistrationv1.MutatingWebhookConfiguration
	validating []admissionregistrationv1.ValidatingWebhookConfiguration
	// webhooksOff: the configurations are removed (and the API server acts so).
	webhooksOff bool

	apiserverPID, etcdPID int
}

// managerBinary builds the manager from ./cmd into dir, unless
// BENCH_MANAGER names a binary built beforehand (to measure another build
// of the manager against the same harness).
func managerBinary(dir string) (string, string, error) {
	if bin := os.Getenv("BENCH_MANAGER"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", "", fmt.Errorf("BENCH_MANAGER: %w", err)
		}
		how := "BENCH_MANAGER=" + bin
		if desc := os.Getenv("BENCH_MANAGER_DESC"); desc != "" {
			how += " (" + desc + ")"
		}
		return abs, how, nil
	}
	bin := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building the manager: %v\n%s", err, out)
	}
	return bin, "go build ./cmd (working tree)", nil
}

func startHarness(ctx context.Context, dir string) (*harness, error) {
	h := &harness{dir: dir}
	var err error
	cluster, err := controlplane.Start(controlplane.Options{Dir: dir, Webhooks: true})
	if err != nil {
		return nil, err
	}
	h.cluster = cluster
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		return h, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 0
	h.cfg = cfg
	if h.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return h, err
	}
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if h.watchCS, err = kubernetes.NewForConfig(proto); err != nil {
		return h, err
	}
	if h.c, err = client.NewWithWatch(cfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
		return h, err
	}
	h.kubectl = controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig}
	h.kubectlCache = filepath.Join(dir, "kubectl-cache")
	h.apiserverPID, h.etcdPID = childPID("kube-apiserver"), childPID("etcd")
	if err := h.saveAndRemoveWebhooks(ctx); err != nil {
		return h, err
	}
	return h, nil
}

func (h *harness) stop() {
	if h.cluster != nil {
		_ = h.cluster.Stop()
	}
}

// saveAndRemoveWebhooks keeps the webhook configurations for the webhook
// measure and deletes them: every other measure runs the manager without
// webhooks, as a control plane without them would.
func (h *harness) saveAndRemoveWebhooks(ctx context.Context) error {
	mut, err := h.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	val, err := h.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(mut.Items) == 0 || len(val.Items) == 0 {
		return fmt.Errorf("expected the webhook configurations of %s to be installed, found %d mutating and %d validating",
			controlplane.WebhookManifests(), len(mut.Items), len(val.Items))
	}
	h.mutating, h.validating = mut.Items, val.Items
	return h.setWebhooks(ctx, false)
}

// setWebhooks installs or removes the saved webhook configurations and waits
// until the API server acts on the change: with them a dry-run create of a
// state probing a denied address is refused, without them it passes.
func (h *harness) setWebhooks(ctx context.Context, on bool) error {
	adm := h.cs.AdmissionregistrationV1()
	for _, m := range h.mutating {
		var err error
		if on {
			m := m.DeepCopy()
			m.ResourceVersion, m.UID = "", ""
			_, err = adm.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{})
		} else {
			err = adm.MutatingWebhookConfigurations().Delete(ctx, m.Name, metav1.DeleteOptions{})
		}
		if err != nil {
			return err
		}
	}
	for _, v := range h.validating {
		var err error
		if on {
			v := v.DeepCopy()
			v.ResourceVersion, v.UID = "", ""
			_, err = adm.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{})
		} else {
			err = adm.ValidatingWebhookConfigurations().Delete(ctx, v.Name, metav1.DeleteOptions{})
		}
		if err != nil {
			return err
		}
	}
	h.webhooksOff = false
	deadline := time.Now().Add(60 * time.Second)
	passes := 0
	for {
		probe := &v1beta1.DynamicIngressState{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "webhook-check"},
			Spec:       v1beta1.DynamicIngressStateSpec{Probe: &v1beta1.HTTPProbe{URL: "http://192.0.2.1/webhook-check"}},
		}
		err := h.c.Create(ctx, probe, client.DryRunAll)
		active := err != nil && strings.Contains(err.Error(), "192.0.2.1")
		if active == on && (on || err == nil) {
			// Both configurations are read by the API server from one
			// informer each; see the change twice in a row to be sure.
			if passes++; passes == 3 {
				h.webhooksOff = !on
				return nil
			}
		} else {
			passes = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhooks on=%v: the API server did not act on the change within 60s (last dry run: %v)", on, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// childPID finds a direct child of this process by its command name
// (envtest runs etcd and kube-apiserver as children of the test).
func childPID(comm string) int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		if ppid, _ := parentPID(pid); ppid == self {
			return pid
		}
	}
	return 0
}

// procStat returns the fields of /proc/<pid>/stat after the command name.
func procStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

func parentPID(pid int) (int, error) {
	f, err := procStat(pid)
	if err != nil || len(f) < 2 {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// clockTicks is USER_HZ, 100 on every Linux the bench runs on.
const clockTicks = 100

// cpuSeconds is the user+system CPU time of a process so far.
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	f, err := procStat(pid)
	// After ")": state(0) ppid(1) ... utime(11) stime(12).
	if err != nil || len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks
}

// rssBytes is the resident set size of a process (VmRSS).
func rssBytes(pid int) int64 { return procStatusBytes(pid, "VmRSS:") }

// procStatusBytes reads a field of /proc/<pid>/status given in kB
// ("VmRSS:", "VmHWM:", the peak RSS) in bytes.
func procStatusBytes(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuSnapshot is the CPU time of the processes that take part in a measure.
type cpuSnapshot map[string]float64

func (h *harness) cpu(m *managerProc) cpuSnapshot {
	s := cpuSnapshot{
		"kube-apiserver": cpuSeconds(h.apiserverPID),
		"etcd":           cpuSeconds(h.etcdPID),
		"bench":          cpuSeconds(os.Getpid()),
	}
	if m != nil {
		s["manager"] = cpuSeconds(m.Pid())
	}
	return s
}

// String lists the processes' CPU seconds: "manager 0.21 / kube-apiserver 1.10 / etcd 0.20 / bench 0.10".
func (s cpuSnapshot) String() string {
	var parts []string
	for _, k := range []string{"manager", "kube-apiserver", "etcd", "bench"} {
		if v, ok := s[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	return strings.Join(parts, " / ")
}

// columns is the CPU seconds as "manager / apiserver / etcd / bench", "–"
// for a process that took no part.
func (s cpuSnapshot) columns() string {
	var parts []string
	for _, k := range []string{"manager", "kube-apiserver", "etcd", "bench"} {
		if v, ok := s[k]; ok {
			parts = append(parts, fmt.Sprintf("%.2f", v))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, " / ")
}

func (s cpuSnapshot) sub(before cpuSnapshot) cpuSnapshot {
	out := cpuSnapshot{}
	for k, v := range s {
		out[k] = v - before[k]
	}
	return out
}

// managerProc is the manager binary running as a process of its own, its
// output in a log file.
type managerProc struct {
	*controlplane.Process
	logPath string
	args    []string
	// metricsURL is set when the manager serves controller-runtime's metrics.
	metricsURL string
	// pprofURL is set when it serves Go's profiles (BENCH_PROFILE, BENCH_TRACE).
	pprofURL string
}

// flagsOf lists the flags a Go program knows, from what -h prints.
func flagsOf(bin string) (map[string]bool, error) {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), "-"); ok && line != strings.TrimLeft(line, " \t") {
			name, _, _ := strings.Cut(rest, " ")
			flags[strings.TrimPrefix(name, "-")] = true
		}
	}
	if !flags["kubeconfig"] {
		return nil, fmt.Errorf("%s -h lists no --kubeconfig flag:\n%s", bin, out)
	}
	return flags, nil
}

// managerOptions are the flags of one manager run beyond the kubeconfig.
type managerOptions struct {
	webhooks bool
	metrics  bool
	// probes lets probes reach 127.0.0.1 (the default guard refuses it).
	probes bool
	// pprof serves Go's profiles (as BENCH_PROFILE does), for a garbage
	// collection on demand (forceGC).
	pprof bool
	extra []string
}

var managerRuns int

// startManager runs the manager binary. Without webhooks it runs with
// --enable-webhooks=false; with them, on the cluster's webhook port and
// certificate.
func (h *harness) startManager(opts managerOptions) (*managerProc, error) {
	managerRuns++
	args := []string{"--kubeconfig=" + h.cluster.Kubeconfig, "--health-probe-bind-address=0"}
	if opts.webhooks {
		args = append(args, "--webhook-cert-path="+h.cluster.WebhookCertDir, fmt.Sprintf("--webhook-port=%d", h.cluster.WebhookPort))
	} else {
		args = append(args, "--enable-webhooks=false")
	}
	var metricsURL string
	if opts.metrics {
		port, err := controlplane.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port))
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		if h.managerFlags["metrics-secure"] {
			// Plain HTTP on loopback: the bench reads it without a token.
			args = append(args, "--metrics-secure=false")
		}
	} else {
		args = append(args, "--metrics-bind-address=0")
	}
	if opts.probes || opts.webhooks {
		args = append(args, "--probe-deny-cidrs=192.0.2.0/24")
	}
	var pprofURL string
	if (opts.pprof || os.Getenv("BENCH_PROFILE") != "" || os.Getenv("BENCH_TRACE") != "") && h.managerFlags["pprof-bind-address"] {
		port, err := controlplane.FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", port))
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", port)
	}
	for _, a := range opts.extra {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !h.managerFlags[name] {
			return nil, fmt.Errorf("the manager has no flag %q", name)
		}
		args = append(args, a)
	}
	logPath := filepath.Join(h.dir, fmt.Sprintf("manager-%02d.log", managerRuns))
	if err := os.WriteFile(logPath, fmt.Appendf(nil, "# %s %s\n", h.managerBin, strings.Join(args, " ")), 0o644); err != nil {
		return nil, err
	}
	proc, err := controlplane.StartProcess(logPath, h.managerBin, args...)
	if err != nil {
		return nil, err
	}
	m := &managerProc{Process: proc, logPath: logPath, args: args, metricsURL: metricsURL, pprofURL: pprofURL}
	if opts.metrics {
		// The metrics endpoint answers once the manager runs.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := scrapeURL(context.Background(), metricsURL, nil); err == nil {
				break
			}
			if m.Exited() || time.Now().After(deadline) {
				m.stop()
				return nil, fmt.Errorf("the manager did not serve metrics within 30s; see %s", logPath)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return m, nil
}

// check fails when the manager is gone.
func (m *managerProc) check() error {
	if m.Exited() {
		return fmt.Errorf("the manager exited; see %s:\n%s", m.logPath, tail(m.logPath, 20))
	}
	return nil
}

func (m *managerProc) stop() {
	if m == nil || m.Exited() {
		return
	}
	m.Stop(15 * time.Second)
}

// countInLog counts the lines of the manager's log holding any of subs.
func (m *managerProc) countInLog(subs ...string) int {
	raw, err := os.ReadFile(m.logPath)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				n++
				break
			}
		}
	}
	return n
}

func tail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// ensureNamespace creates a namespace when it does not exist.
func (h *harness) ensureNamespace(ctx context.Context, name string) error {
	_, err := h.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// clearNamespace deletes the project's objects and the Ingresses of a
// namespace (there is no namespace controller or garbage collector here).
func (h *harness) clearNamespace(ctx context.Context, ns string) error {
	var errs []error
	errs = append(errs, h.c.DeleteAllOf(ctx, &v1beta1.DynamicIngress{}, client.InNamespace(ns)))
	errs = append(errs, h.c.DeleteAllOf(ctx, &v1beta1.DynamicIngressState{}, client.InNamespace(ns)))
	errs = append(errs, h.cs.NetworkingV1().Ingresses(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	return errors.Join(errs...)
}

// parallel runs f for 0..n-1 on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	if workers > n {
		workers = n
	}
	next := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			var first error
			for i := range next {
				if err := f(i); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
