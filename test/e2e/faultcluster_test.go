package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// faultCluster is a local cluster of one fault test's own: the tests that
// stop kube-apiserver or run two managers do it there, so that the suite's
// shared cluster and manager stay exactly as the other tests expect them
// even when a fault test fails halfway (a second cluster costs a few
// seconds; a shared API server that failed to come back would fail every
// later test instead of one).
type faultCluster struct {
	t       *testing.T
	cluster *controlplane.Cluster
	dir     string
	k       controlplane.Kubectl
}

// startFaultCluster starts etcd, kube-apiserver with the webhook
// configurations, and the garbage collector, like the suite's cluster.
// auditPolicy, when set, is the API server's audit policy.
func startFaultCluster(t *testing.T, auditPolicy string) *faultCluster {
	t.Helper()
	dir, err := os.MkdirTemp(workDir, "fault-")
	if err != nil {
		t.Fatal(err)
	}
	// envtest logs through controller-runtime's logger: set it, or
	// controller-runtime prints a warning with a stack trace.
	suite.SetTestLogger()
	c, err := controlplane.Start(controlplane.Options{Dir: dir, GarbageCollector: true, Webhooks: true, AuditPolicy: auditPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	t.Logf("fault cluster: %s (kubeconfig, logs)", dir)
	return &faultCluster{t: t, cluster: c, dir: dir, k: controlplane.Kubectl{Kubeconfig: c.Kubeconfig}}
}

// kubectl runs kubectl against the fault cluster and fails the test when
// it fails.
func (f *faultCluster) kubectl(stdin string, args ...string) string {
	f.t.Helper()
	out, stderr, err := f.k.Run(stdin, args...)
	if err != nil {
		f.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// faultManager is one manager process on the fault cluster.
type faultManager struct {
	name string
	log  string
	*controlplane.Process
}

// startManager runs the manager binary against the fault cluster with
// kubeconfig, its webhook server on webhookPort and its health endpoint on
// a port of its own (metrics off), and waits until it is ready (its
// webhook server serves).
func (f *faultCluster) startManager(name, kubeconfig string, webhookPort int, extra ...string) *faultManager {
	f.t.Helper()
	healthPort, err := controlplane.FreePort()
	if err != nil {
		f.t.Fatal(err)
	}
	health := fmt.Sprintf("127.0.0.1:%d", healthPort)
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + health,
		"--webhook-cert-path=" + f.cluster.WebhookCertDir,
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		"--zap-time-encoding=rfc3339nano",
	}, extra...)
	m := &faultManager{name: name, log: filepath.Join(f.dir, name+".log")}
	if m.Process, err = controlplane.StartProcess(m.log, managerBinary, args...); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Stop(20 * time.Second) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m.Exited() {
			f.t.Fatalf("manager %s exited at start; see %s", name, m.log)
		}
		if resp, err := http.Get("http://" + health + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("manager %s not ready within 30s; see %s", name, m.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logLines counts the lines of the manager's log that hold msg.
func (m *faultManager) logLines(msg string) int {
	raw, _ := os.ReadFile(m.log)
	return strings.Count(string(raw), `"msg":"`+msg+`"`)
}

// createFlipFleet creates state "flag" answering 503 and n DynamicIngresses
// site-000... following it (passive: backend web; active, on 200: backend
// sorry), plus extra manifests, and waits until every site is Ready.
func (f *faultCluster) createFlipFleet(ns string, n int, extra string) {
	f.t.Helper()
	start := time.Now()
	f.kubectl(stateManifest(ns, "flag", "503")+"---\n"+extra, "apply", "-f", "-")
	// kubectl applies one object after the other, each through the
	// webhooks: four kubectl processes at once take about half the time.
	const parts = 4
	errs := make(chan error, parts)
	for p := range parts {
		var manifests strings.Builder
		for i := p; i < n; i += parts {
			manifests.WriteString(dynamicIngressManifest(ns, siteName(i), siteName(i), "flag", "/") + "---\n")
		}
		go func() {
			out, stderr, err := f.k.Run(manifests.String(), "apply", "-f", "-")
			if err != nil {
				err = fmt.Errorf("kubectl apply: %w\n%s%s", err, out, stderr)
			}
			errs <- err
		}()
	}
	for range parts {
		if err := <-errs; err != nil {
			f.t.Fatal(err)
		}
	}
	// One kubectl get per poll: kubectl wait --all waits for one object
	// after the other, which takes seconds for hundreds.
	deadline := time.Now().Add(2 * time.Minute)
	for f.readySites(ns) != n {
		if time.Now().After(deadline) {
			f.t.Fatalf("not every DynamicIngress is Ready 2 minutes after kubectl apply")
		}
		time.Sleep(250 * time.Millisecond)
	}
	f.t.Logf("%d DynamicIngresses created and Ready in %v", n, time.Since(start).Round(100*time.Millisecond))
}

func siteName(i int) string { return fmt.Sprintf("site-%03d", i) }

// flip sets the response of state "flag"; 200 selects the active
// template (backend sorry), anything else the passive one (backend web).
func (f *faultCluster) flip(ns, code string) {
	f.t.Helper()
	f.kubectl("", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, code))
}

var siteBackend = regexp.MustCompile(`(?m)^(site-\d{3})=(\S*)$`)

// siteBackends is the backend service of every site-NNN Ingress, as
// kubectl shows it; nil when kubectl fails (the API server is down).
func (f *faultCluster) siteBackends(ns string) map[string]string {
	out, _, err := f.k.Run("", "get", "-n", ns, "ingress", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.spec.rules[0].http.paths[0].backend.service.name}{"\n"}{end}`)
	if err != nil {
		return nil
	}
	backends := map[string]string{}
	for _, m := range siteBackend.FindAllStringSubmatch(out, -1) {
		backends[m[1]] = m[2]
	}
	return backends
}

// waitForSites polls until all n site Ingresses have backend want and
// returns when they did; it fails the test after timeout, naming the ones
// that did not.
func (f *faultCluster) waitForSites(ns string, n int, want string, timeout time.Duration) time.Time {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		backends := f.siteBackends(ns)
		var wrong []string
		for i := range n {
			if got := backends[siteName(i)]; got != want {
				wrong = append(wrong, fmt.Sprintf("%s=%q", siteName(i), got))
			}
		}
		if backends != nil && len(wrong) == 0 {
			return time.Now()
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d of %d Ingresses do not have backend %q after %v: %s", len(wrong), n, want, timeout, strings.Join(wrong, " "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// conditions is the Active and Ready conditions of every DynamicIngress
// of ns as kubectl shows them, by name: "Active=True/Matched
// Ready=True/Synced".
func (f *faultCluster) conditions(ns string) map[string]string {
	f.t.Helper()
	out := f.kubectl("", "get", "-n", ns, "di", "-o", `jsonpath={range .items[*]}{.metadata.name}=`+
		`Active={.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Active")].reason} `+
		`Ready={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}{"\n"}{end}`)
	conds := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, c, ok := strings.Cut(line, "="); ok {
			conds[name] = c
		}
	}
	return conds
}

// readySites counts the site DynamicIngresses that kubectl shows
// Ready=True with reason Synced.
func (f *faultCluster) readySites(ns string) int {
	f.t.Helper()
	ready := 0
	for name, c := range f.conditions(ns) {
		if strings.HasPrefix(name, "site-") && strings.HasSuffix(c, " Ready=True/Synced") {
			ready++
		}
	}
	return ready
}

// auditWritesPolicy makes the API server log every write (never reads)
// with who made it.
const auditWritesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
`

// auditEvent is what the tests read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// dryRun reports a dry run, which writes nothing: the webhooks dry-run
// Ingresses to check templates.
func (e auditEvent) dryRun() bool { return strings.Contains(e.RequestURI, "dryRun=") }

// resource is the written resource, with its subresource
// (dynamicingresses/status).
func (e auditEvent) resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// writes reads the audit log: every completed write, dry runs included,
// received in [from, to).
func (f *faultCluster) writes(from, to time.Time) []auditEvent {
	f.t.Helper()
	file, err := os.Open(f.cluster.AuditLog)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	var events []auditEvent
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			f.t.Fatalf("reading the audit log: %v: %s", err, scanner.Text())
		}
		if e.Stage != "ResponseComplete" || e.Received.Before(from) || !e.Received.Before(to) {
			continue
		}
		events = append(events, e)
	}
	if err := scanner.Err(); err != nil {
		f.t.Fatal(err)
	}
	return events
}

// writesBy counts the writes of one user per resource, dry runs apart
// (as "dry-run <resource>").
func writesBy(events []auditEvent, user string) map[string]int {
	counts := map[string]int{}
	for _, e := range events {
		if e.User.Username != user {
			continue
		}
		if e.dryRun() {
			counts["dry-run "+e.resource()]++
		} else {
			counts[e.resource()]++
		}
	}
	return counts
}

// realWrites is the number of writes in counts that are not dry runs.
func realWrites(counts map[string]int) int {
	total := 0
	for r, c := range counts {
		if !strings.HasPrefix(r, "dry-run ") {
			total += c
		}
	}
	return total
}
