// Command demo runs dynamic-ingress-operator for real on a local control
// plane and tells its story: the samples applied, the storefront served
// by Traefik on loopback, a maintenance window opened by a status API, a
// kill switch fired by hand (what users get through Traefik before and
// after it, when the operator saw it served, and what its notifiers
// posted to a local sink), an override pinning one DynamicIngress, a
// scheduled window opening and closing, a kill switch driven by a
// Prometheus error ratio, a cluster-scoped kill switch flipping
// switches in several namespaces, every Ingress switching, and a bad apply
// rejected. `make demo` runs it; with --once it
// runs the story once and exits non-zero if any step did not happen.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

const namespace = "demo"

func main() {
	once := flag.Bool("once", false, "Run the story once and exit; non-zero when a step did not happen.")
	manager := flag.String("manager", "bin/manager", "Path of the manager binary.")
	plugin := flag.String("plugin", "bin/kubectl-dynamic", "Path of the kubectl-dynamic plugin binary (`kubectl dynamic`).")
	flagAddr := flag.String("flag-service", "127.0.0.1:18080", "Address of the local status API that the maintenance sample probes.")
	promAddr := flag.String("prometheus", "127.0.0.1:18090", "Address of the local stand-in for Prometheus that the kill-switch recipe probes.")
	flag.Parse()
	if err := run(*once, *manager, *plugin, *flagAddr, *promAddr); err != nil {
		fmt.Fprintf(os.Stderr, "\nDEMO FAILED: %v\n", err)
		os.Exit(1)
	}
}

func run(once bool, managerPath, pluginPath, flagAddr, promAddr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// `make demo | tee log` and Ctrl-C: tee dies first, and the cleanup below
	// must not be killed by writing to its closed pipe.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	dir, err := os.MkdirTemp("", "dynamic-ingress-demo-")
	if err != nil {
		return err
	}
	managerPath, err = filepath.Abs(managerPath)
	if err != nil {
		return err
	}
	pluginDir, err := pluginDirectory(pluginPath)
	if err != nil {
		return err
	}

	title("Starting a local control plane: etcd, kube-apiserver, and kube-controller-manager's garbage collector")
	cluster, err := controlplane.Start(controlplane.Options{Dir: dir, GarbageCollector: true, Webhooks: true})
	if err != nil {
		return err
	}
	defer func() {
		title("Stopping the control plane")
		_ = cluster.Stop()
	}()
	say("kubeconfig: %s", cluster.Kubeconfig)
	say("In another terminal:  export KUBECONFIG=%s", cluster.Kubeconfig)

	flags, err := controlplane.StartStatusAPI(flagAddr, "/api/v1/maintenance", statusNoMaintenance)
	if err != nil {
		return err
	}
	defer func() { _ = flags.Close() }()
	// It wants the token that config/samples keeps in a Secret.
	flags.RequireAuthorization("Bearer demo-token")
	say("Status API (plays a feature-flag service; wants the token of config/samples' Secret): %s", flags.URL)
	big, err := controlplane.StartStatusAPI("127.0.0.1:0", "/big", bigAnswer)
	if err != nil {
		return err
	}
	defer func() { _ = big.Close() }()
	prom, err := controlplane.StartPrometheus(promAddr, "0.004")
	if err != nil {
		return err
	}
	defer func() { _ = prom.Close() }()
	say("Prometheus stand-in (an instant query's answer, a new timestamp each time): http://%s", promAddr)
	sink, err := startNotificationSink()
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	say("Notification sink (plays a CloudEvents receiver and a Slack incoming webhook): %s", sink.url)

	title("Starting Traefik on loopback: the data plane users reach")
	traffic, err := startDataPlane(filepath.Join(dir, "traefik"), cluster.Kubeconfig)
	if err != nil {
		return err
	}
	defer traffic.Stop()
	say("Traefik %s serves the cluster's Ingresses and its Gateway's HTTPRoutes at http://%s (logs: %s)", controlplane.TraefikVersion, traffic.traefik.Address, traffic.traefik.Log)

	title("Starting the manager")
	args := []string{
		"--kubeconfig=" + cluster.Kubeconfig,
		"--health-probe-bind-address=0",
		// The status API of this demo and its notification sink are on
		// loopback, which probes and notifiers may not reach by default:
		// keep the rest of the default deny list.
		"--probe-deny-cidrs=169.254.0.0/16,fe80::/10,0.0.0.0/8",
	}
	if cluster.WebhookCertDir != "" {
		args = append(args, "--webhook-cert-path="+cluster.WebhookCertDir, fmt.Sprintf("--webhook-port=%d", cluster.WebhookPort))
	}
	metricsPort, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	// Plain HTTP on loopback, for the demo's last step to read.
	args = append(args, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort), "--metrics-secure=false")
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	logPath := filepath.Join(dir, "manager.log")
	mgr, err := controlplane.StartProcess(logPath, managerPath, args...)
	if err != nil {
		return err
	}
	defer mgr.Stop(10 * time.Second)
	say("%s %s", managerPath, strings.Join(args, " "))
	say("logs: %s", logPath)

	k := &kubectl{controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig, PluginDir: pluginDir}}
	if err := story(k, flags, big, prom, traffic, sink, metricsURL); err != nil {
		if mgr.Exited() {
			err = fmt.Errorf("%w (the manager exited; see %s)", err, logPath)
		}
		return err
	}

	if once {
		title("Done: every step happened")
		return nil
	}
	title("The cluster keeps running. Try, in another terminal:")
	say("export KUBECONFIG=%s", cluster.Kubeconfig)
	if _, err := exec.LookPath("kubectl"); err != nil {
		say("alias kubectl=%s", filepath.Join(controlplane.AssetsDir(), "kubectl"))
	}
	say("export PATH=%s:$PATH   # kubectl dynamic", pluginDir)
	say("kubectl get dynamic -n %s", namespace)
	say("kubectl dynamic status killswitch -n %s", namespace)
	say("kubectl dynamic preview killswitch -n %s --status 503", namespace)
	say("kubectl dynamic status storefront-up -n %s   # the storefront's pods: ready count, minReady", namespace)
	say("kubectl patch dis killswitch -n %s --type merge -p '{\"spec\":{\"fixedResponse\":{\"status\":\"503\"}}}'", namespace)
	say("kubectl patch cdis global-killswitch --type merge -p '{\"spec\":{\"fixedResponse\":{\"status\":\"503\"}}}'   # every public namespace")
	say("curl -H 'Host: %s' %s   # the storefront through Traefik", storefrontHost, traffic.url())
	say("curl -H 'Host: %s' %s   # its HTTPRoute through Traefik's Gateway", routeHost, traffic.url())
	say("kubectl get di storefront -n %s -o jsonpath='{.status.served}'", namespace)
	say("kubectl get dnotify -n %s   # the notifiers post to the sink at %s", namespace, sink.url)
	say("kubectl get dynamicingress -A")
	say("curl -X PUT http://%s/api/v1/maintenance -d '{\"maintenance\": true}'", flagAddr)
	say("kubectl get ingress -n %s -w", namespace)
	say("Press Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// The status API's answers: chatty, as real ones are; the samples match the
// one field that matters.
const (
	statusNoMaintenance = `{"maintenance": false, "since": null, "by": "status-api"}`
	statusMaintenance   = `{"maintenance": true, "since": "2026-11-22T02:00:00Z", "by": "ops"}`
)

// wideColumns shows what `kubectl get di -o wide` adds: the Active
// condition's reason and the override.
var wideColumns = []string{"get", "-n", namespace, "dynamicingress", "-o", "wide"}

// story runs the steps a newcomer watches, each checked.
func story(k *kubectl, flags, big *controlplane.StatusAPI, prom *controlplane.Prometheus, traffic *dataPlane, sink *notificationSink, metricsURL string) error {
	title("1. Apply the samples: a Secret, three states, a cluster state, six DynamicIngresses, a DynamicHTTPRoute and a notifier")
	if err := k.show("create", "namespace", namespace); err != nil {
		return err
	}
	say("The landing page follows the platform's cluster-scoped global-killswitch, whose grant admits")
	say("the namespaces labelled %s: label the namespace first.", publicTier)
	if err := k.show("label", "namespace", namespace, publicTier); err != nil {
		return err
	}
	if err := k.show("apply", "-n", namespace, "-k", "config/samples"); err != nil {
		return err
	}
	if err := k.show("wait", "-n", namespace, "--for=condition=Ready", "dynamicingress", "--all", "--timeout=60s"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.status.statusCode}=200", "dis/maintenance"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "dynamic"); err != nil {
		return err
	}
	say("The maintenance state sends the status API a bearer token that it reads from the Secret")
	say("status-api-token when it probes: the token is never written in the state (CODE 200, not 401).")
	say("No maintenance, the kill switch is off, the weekly window is closed: the storefront, the")
	say("partner API and the checkout have their normal Ingresses; the maintenance ones do not exist.")
	say("The storefront is also served through Gateway API: its HTTPRoute routes to the storefront.")
	if err := k.show("get", "-n", namespace, "ingress,httproute"); err != nil {
		return err
	}
	if err := serveStorefront(k, traffic); err != nil {
		return err
	}
	if err := subscribe(k, sink); err != nil {
		return err
	}

	title("2. The status API opens a maintenance window")
	flags.Set(http.StatusOK, statusMaintenance)
	say("GET /api/v1/maintenance now answers %s;", statusMaintenance)
	say("the state probes it every 2s. The maintenance page matches it with bodyMatch: Contains,")
	say("the ALB rule with a CEL expression (response.json.maintenance == true).")
	for _, ing := range []string{"maintenance-page", "alb-maintenance-rule"} {
		if err := k.waitQuiet("--for=create", "ingress/"+ing); err != nil {
			return err
		}
	}
	if err := k.show("get", "-n", namespace, "ingress"); err != nil {
		return err
	}

	title("3. The kill switch fires: the storefront goes to the sorry page; the partner API is pinned")
	say("Before firing it, ask what it would change: kubectl dynamic preview runs the operator's own")
	say("decision on the answer 503 and shows each target's change from a server-side dry run. It writes nothing.")
	if err := k.showContaining([]string{`2 switches would change mode`, `DynamicIngress "storefront" (target demo/storefront): passive -> active`,
		`DynamicHTTPRoute "storefront-route" (target demo/storefront-route): passive -> active`, `+            name: sorry-page`},
		"dynamic", "preview", "killswitch", "-n", namespace, "--status", "503"); err != nil {
		return err
	}
	fired, err := k.flipKillSwitch(traffic, "503", sorryPage)
	if err != nil {
		return err
	}
	say("kubectl dynamic wait returns once every target is in the new shape and every status says so:")
	if err := k.showContaining([]string{`all 3 switches in shape (2 active, 1 passive)`}, "dynamic", "wait", "killswitch", "-n", namespace, "--timeout=60s"); err != nil {
		return err
	}
	if err := k.showContaining([]string{"3 switches: 2 active, 1 passive, 0 not yet in shape"}, "dynamic", "status", "killswitch", "-n", namespace); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "ingress", "storefront", "partner-api", "-o", "custom-columns=NAME:.metadata.name,BACKEND:.spec.rules[0].http.paths[0].backend.service.name,REDIRECT:.metadata.annotations.nginx\\.ingress\\.kubernetes\\.io/permanent-redirect"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].filters[0].type}=RequestRedirect", "httproute/storefront-route"); err != nil {
		return err
	}
	say("Next to the Ingress, the DynamicHTTPRoute turned its HTTPRoute into a redirect to the sorry page:")
	if err := k.show("get", "-n", namespace, "httproute", "storefront-route", "-o", "custom-columns=NAME:.metadata.name,FILTER:.spec.rules[0].filters[0].type,TO:.spec.rules[0].filters[0].requestRedirect.hostname,BACKEND:.spec.rules[0].backendRefs[0].name"); err != nil {
		return err
	}
	say("The partner API has spec.override: Passive, so the kill switch leaves it alone:")
	if err := k.show(wideColumns...); err != nil {
		return err
	}
	say("Written is not served: Traefik applies what it reads at most every 2s. With --for=served,")
	say("kubectl dynamic wait also waits until the operator saw the storefront served through Traefik:")
	if err := k.showContaining([]string{`all 3 switches in shape and served (2 active, 1 passive)`}, "dynamic", "wait", "killswitch", "-n", namespace, "--for=served", "--timeout=60s"); err != nil {
		return err
	}
	if err := reportFlip(k, traffic, "the flip", fired, "-> "+routeRedirect); err != nil {
		return err
	}
	fmt.Println()
	say("The notifiers posted the change, and once every switch showed it, the flip's summary:")
	if err := showNotifications(k, sink, "killswitch", flipNotifications("killswitch", namespace+"/killswitch", "200", "503")); err != nil {
		return err
	}

	title("4. Break glass: pin the storefront back to its normal shape during the kill switch")
	say("kubectl dynamic override sets spec.override and says what the state would select:")
	if err := k.showContaining([]string{`spec.override pins passive mode; state "killswitch" would select active mode`},
		"dynamic", "override", "dynamicingress/storefront", "passive", "-n", namespace); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=storefront", "ingress/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "jsonpath={.status.conditions[?(@.type==\"Active\")].message}{\"\\n\"}"); err != nil {
		return err
	}
	say("The webhook wrote who set the override, the request's user, and when; the notifiers tell the channel:")
	if _, err := k.overrideAudit("storefront"); err != nil {
		return err
	}
	if err := showOverride(sink, "storefront", "Passive"); err != nil {
		return err
	}
	say("Removing the override follows the kill switch again, at once:")
	if err := k.showContaining([]string{`spec.override removed; it follows state "killswitch", which selects active mode`},
		"dynamic", "override", "dynamicingress/storefront", "none", "-n", namespace); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry-page", "ingress/storefront"); err != nil {
		return err
	}
	if err := k.showContaining([]string{`all 3 switches in shape and served (2 active, 1 passive)`}, "dynamic", "wait", "killswitch", "-n", namespace, "--for=served", "--timeout=60s"); err != nil {
		return err
	}
	say("The removal is audited, and sent, too:")
	if _, err := k.overrideAudit("storefront"); err != nil {
		return err
	}
	if err := showOverride(sink, "storefront", ""); err != nil {
		return err
	}

	title("5. All clear: the window closes and the kill switch is reset")
	flags.Set(http.StatusOK, statusNoMaintenance)
	reset, err := k.flipKillSwitch(traffic, "200", storefrontPage)
	if err != nil {
		return err
	}
	for _, ing := range []string{"maintenance-page", "alb-maintenance-rule"} {
		if err := k.waitQuiet("--for=delete", "ingress/"+ing); err != nil {
			return err
		}
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=storefront", "ingress/storefront"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].backendRefs[0].name}=storefront-gateway", "httproute/storefront-route"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "ingress", "storefront", "-o", "custom-columns=NAME:.metadata.name,BACKEND:.spec.rules[0].http.paths[0].backend.service.name,REDIRECT:.metadata.annotations.nginx\\.ingress\\.kubernetes\\.io/permanent-redirect"); err != nil {
		return err
	}
	if err := k.showContaining([]string{`all 3 switches in shape and served (0 active, 3 passive)`}, "dynamic", "wait", "killswitch", "-n", namespace, "--for=served", "--timeout=60s"); err != nil {
		return err
	}
	if err := reportFlip(k, traffic, "the flip back", reset, storefrontPage); err != nil {
		return err
	}
	fmt.Println()
	say("The notifiers posted the flip back:")
	if err := showNotifications(k, sink, "killswitch", flipNotifications("killswitch", namespace+"/killswitch", "503", "200")); err != nil {
		return err
	}
	say("The Switched events were sent after the statuses of their flip: the statuses, which wait reads, go first.")
	if err := k.show("get", "-n", namespace, "events", "--field-selector", "reason=Switched", "--sort-by=.metadata.creationTimestamp"); err != nil {
		return err
	}

	if err := scheduledWindow(k); err != nil {
		return err
	}

	if err := errorRatioKillSwitch(k, prom); err != nil {
		return err
	}

	if err := tenantIsolation(k, big); err != nil {
		return err
	}

	if err := platformKillSwitch(k, sink); err != nil {
		return err
	}

	title("10. A bad apply is rejected at once, with the field and the reason")
	say("A second DynamicIngress may not take over the storefront Ingress:")
	if err := k.showRejected(takeoverDynamicIngress, "dynamicingress/storefront-copy", `spec.target: Invalid value: "demo/storefront": DynamicIngress "storefront" already targets Ingress demo/storefront`); err != nil {
		return err
	}
	if err := requestPermission(k); err != nil {
		return err
	}
	if err := appDown(k, traffic); err != nil {
		return err
	}
	if err := pinThatEnds(k, traffic); err != nil {
		return err
	}
	if err := pinNeedsApproval(k, traffic); err != nil {
		return err
	}
	return memoryAtRest(k, metricsURL, traffic)
}

// requestPermission shows that a user who may edit switches but not create
// states cannot make the manager send requests through spec.served.
func requestPermission(k *kubectl) error {
	say("A developer who may edit DynamicIngresses here, but not create states, may not give one a")
	say("spec.served either: a served check makes the manager send requests, as a probe does:")
	for _, args := range [][]string{
		{"create", "clusterrole", "demo-switch-editor", "--verb=get,list,watch,create,update,patch,delete", "--resource=dynamicingresses.ingress.dynamicingress.io"},
		{"create", "rolebinding", "dev-edits-switches", "-n", namespace, "--clusterrole=demo-switch-editor", "--user=dev"},
	} {
		if err := k.show(args...); err != nil {
			return err
		}
	}
	// The API server's authorizer sees the binding a moment later.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := k.Command("", "auth", "can-i", "create", "dynamicingresses.ingress.dynamicingress.io", "-n", namespace, "--as=dev").Output()
		if strings.TrimSpace(string(out)) == "yes" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dev may not create dynamicingresses 30s after its RoleBinding: %q", out)
		}
	}
	return k.showRejectedIn(namespace, servedByADeveloper, "dynamicingress/status-check",
		`spec.served: Forbidden: a served check makes the manager send requests; it needs permission to create dynamicingressstates in namespace "demo"`, "--as=dev")
}

// servedByADeveloper is a switch with spec.served, applied as a user who
// may not create states; it never reaches the cluster.
const servedByADeveloper = `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata:
  name: status-check
spec:
  target:
    name: status-check
  state: killswitch
  expected:
    statusCode: "503"
  activeIngress:
    template:
      spec:
        defaultBackend:
          service:
            name: sorry-page
            port:
              number: 80
  served:
    url: http://internal-admin.demo.svc.cluster.local/
    active:
      statusCode: "503"
    passive:
      statusCode: "200"
`

// scheduledWindow adds a one-off window to the weekly schedule that opens a
// few seconds from now, and watches the checkout close and reopen on time.
func scheduledWindow(k *kubectl) error {
	title("6. A scheduled window: the checkout closes on time, and reopens on time")
	start := time.Now().Add(6 * time.Second).Truncate(time.Second)
	end := start.Add(6 * time.Second)
	window := fmt.Sprintf(`[{"op":"add","path":"/spec/schedule/windows/-","value":{"start":%q,"end":%q}}]`,
		start.Format(time.RFC3339), end.Format(time.RFC3339))
	say("Besides Sundays 02:00-04:00 Berlin time, add a window from %s to %s:", start.Format("15:04:05"), end.Format("15:04:05"))
	if err := k.show("patch", "-n", namespace, "dis", "weekly-maintenance", "--type", "json", "-p", window); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.status.nextTransitionTime}="+start.UTC().Format(time.RFC3339), "dis/weekly-maintenance"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "dis", "weekly-maintenance", "-o", "custom-columns=NAME:.metadata.name,MODE:.status.mode,BODY:.status.body,NEXT:.status.nextTransitionTime"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=maintenance-page", "ingress/checkout"); err != nil {
		return err
	}
	if late := time.Since(start); late < 0 || late > 3*time.Second {
		return fmt.Errorf("the checkout switched %s after the window opened, want within a second or two", late)
	}
	say("The window is open: the checkout's Ingress sends shoppers to the maintenance page.")
	if err := k.show("get", "-n", namespace, "dis", "weekly-maintenance", "-o", "custom-columns=NAME:.metadata.name,MODE:.status.mode,BODY:.status.body,NEXT:.status.nextTransitionTime"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=checkout", "ingress/checkout"); err != nil {
		return err
	}
	say("The window closed at %s: the checkout is back. Nothing polled in between:", end.Format("15:04:05"))
	say("the state's status was written at the two boundaries only.")
	return nil
}

const takeoverDynamicIngress = `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata:
  name: storefront-copy
spec:
  target:
    name: storefront
  state: killswitch
  expected:
    statusCode: "200"
  activeIngress:
    template:
      spec:
        defaultBackend:
          service:
            name: sorry-page
            port:
              number: 80
`

// kubectl runs the real kubectl against the demo cluster and prints what a
// newcomer should see.
type kubectl struct {
	controlplane.Kubectl
}

// show prints a kubectl command and its output, and fails when it fails.
func (k *kubectl) show(args ...string) error {
	fmt.Printf("\n$ kubectl %s\n", quoteArgs(args))
	cmd := k.Command("", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &out), io.MultiWriter(os.Stdout, &out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", quoteArgs(args), err)
	}
	return nil
}

// showContaining is show, and fails unless the output has every one of want.
func (k *kubectl) showContaining(want []string, args ...string) error {
	fmt.Printf("\n$ kubectl %s\n", quoteArgs(args))
	out, err := k.Command("", args...).CombinedOutput()
	fmt.Print(string(out))
	if err != nil {
		return fmt.Errorf("kubectl %s: %w", quoteArgs(args), err)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			return fmt.Errorf("kubectl %s did not print %q", quoteArgs(args), w)
		}
	}
	return nil
}

// pluginDirectory is the directory of the kubectl-dynamic binary at path,
// to put on kubectl's PATH.
func pluginDirectory(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if filepath.Base(abs) != "kubectl-dynamic" {
		return "", fmt.Errorf("--plugin %s: kubectl finds a plugin by its file name, which must be kubectl-dynamic", path)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--plugin: %w (make build builds it)", err)
	}
	return filepath.Dir(abs), nil
}

// waitQuiet waits with kubectl wait in the demo namespace, printing only a
// summary.
func (k *kubectl) waitQuiet(args ...string) error {
	return k.waitQuietIn(namespace, args...)
}

// waitQuietIn is waitQuiet in namespace ns.
func (k *kubectl) waitQuietIn(ns string, args ...string) error {
	full := append([]string{"wait", "-n", ns, "--timeout=60s"}, args...)
	start := time.Now()
	out, err := k.Command("", full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", quoteArgs(full), err, out)
	}
	result := strings.TrimSpace(string(out))
	if result == "" {
		result = args[len(args)-1] + " is gone"
	}
	if ns != namespace {
		result = "in " + ns + ", " + result
	}
	say("waited %.1fs: %s", time.Since(start).Seconds(), result)
	return nil
}

// showApply applies a manifest to the demo namespace, printed as the
// command that makes it (source), and prints kubectl's answer.
func (k *kubectl) showApply(manifest, source string) error {
	return k.showApplyIn(namespace, manifest, source)
}

// showApplyIn is showApply in namespace ns; with no source, it prints the
// manifest itself.
func (k *kubectl) showApplyIn(ns, manifest, source string) error {
	if source == "" {
		fmt.Printf("\n$ kubectl apply -n %s -f - <<EOF\n%sEOF\n", ns, manifest)
	} else {
		fmt.Printf("\n$ %s | kubectl apply -n %s -f -\n", source, ns)
	}
	out, err := k.Command(manifest, "apply", "-n", ns, "-f", "-").CombinedOutput()
	fmt.Print(string(out))
	if err != nil {
		return fmt.Errorf("kubectl apply: %w", err)
	}
	return nil
}

// showRejected applies a manifest to the demo namespace that must be
// refused, prints kubectl's answer, and checks that the refusal says want.
func (k *kubectl) showRejected(manifest, object, want string) error {
	return k.showRejectedIn(namespace, manifest, object, want)
}

// showRejectedIn is showRejected in namespace ns, with kubectl's extra
// flags (--as=USER) after the others.
func (k *kubectl) showRejectedIn(ns, manifest, object, want string, extra ...string) error {
	fmt.Printf("\n$ kubectl apply -n %s -f -%s <<EOF\n%sEOF\n", ns, strings.Join(append([]string{""}, extra...), " "), manifest)
	out, err := k.Command(manifest, append([]string{"apply", "-n", ns, "-f", "-"}, extra...)...).CombinedOutput()
	fmt.Print(string(out))
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("the bad DynamicIngress was not rejected (err %v)", err)
	}
	if !strings.Contains(string(out), want) {
		return fmt.Errorf("the rejection does not say %q", want)
	}
	if out, err := k.Command("", "get", "-n", ns, object).CombinedOutput(); err == nil || !strings.Contains(string(out), "NotFound") {
		return fmt.Errorf("%s exists after its apply was rejected: %s", object, out)
	}
	say("kubectl exited with code %d; %s was not created.", exit.ExitCode(), object)
	return nil
}

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " {}\"'$") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func title(s string) { fmt.Printf("\n==> %s\n", s) }
func say(format string, args ...any) {
	fmt.Printf("    "+format+"\n", args...)
}
