package main

import "fmt"

// publicTier is the label that admits a namespace to config/samples'
// cluster state global-killswitch.
const publicTier = "traffic.example.com/tier=public"

// The two app teams of step 9, each in a namespace of its own.
const (
	blog = "blog"
	docs = "docs"
)

// followerSwitch is an app team's DynamicIngress that follows the
// platform's kill switch: the team's own service while passive, the sorry
// page while active. %[1]s is the site (host and service), %[2]s the
// DynamicIngress and its Ingress.
const followerSwitch = `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata:
  name: %[2]s
spec:
  target: {name: %[2]s}
  stateRef: {kind: ClusterDynamicIngressState, name: global-killswitch}
  expected: {statusCode: "503"}
  passiveIngress:
    template:
      spec: {rules: [{host: %[1]s.example.com, http: {paths: [{path: /, pathType: Prefix,
              backend: {service: {name: %[1]s, port: {number: 80}}}}]}}]}
  activeIngress:
    template:
      spec: {rules: [{host: %[1]s.example.com, http: {paths: [{path: /, pathType: Prefix,
              backend: {service: {name: sorry-page, port: {number: 80}}}}]}}]}
`

// siteBackends lists the Ingresses named site in every namespace with the
// Service they send to.
var siteBackends = []string{"get", "ingress", "-A", "--field-selector", "metadata.name=site",
	"-o", "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,HOST:.spec.rules[0].host,BACKEND:.spec.rules[0].http.paths[0].backend.service.name"}

// platformKillSwitch shows one cluster state flipping switches in several
// namespaces, a namespace that loses its label stop following it (and a
// new follower there refused), and the label given back.
func platformKillSwitch(k *kubectl, sink *notificationSink) error {
	title("9. One kill switch for every public namespace: a cluster state flips switches in three namespaces")
	say("global-killswitch (config/samples) is a ClusterDynamicIngressState: one object for the whole")
	say("cluster, answering once however many switches follow it. Its grant (FOLLOWERS) admits the")
	say("namespaces labelled %s; the landing page in %s follows it already.", publicTier, namespace)
	if err := k.show("get", "cdis", "global-killswitch", "-o", "wide"); err != nil {
		return err
	}
	say("Two app teams, %s and %s, each get a namespace that the platform team labels, and follow", blog, docs)
	say("the kill switch with spec.stateRef:")
	for _, ns := range []string{blog, docs} {
		if err := k.show("create", "namespace", ns); err != nil {
			return err
		}
		if err := k.show("label", "namespace", ns, publicTier); err != nil {
			return err
		}
		source := ""
		if ns != blog {
			source = fmt.Sprintf("sed s/%s/%s/g site.yaml", blog, ns)
		}
		if err := k.showApplyIn(ns, fmt.Sprintf(followerSwitch, ns, "site"), source); err != nil {
			return err
		}
		if err := k.waitQuietIn(ns, "--for=condition=Ready", "dynamicingress/site"); err != nil {
			return err
		}
	}

	say("The platform team fires it: one edit.")
	if err := k.show("patch", "cdis", "global-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`); err != nil {
		return err
	}
	say("kubectl dynamic wait watches the cluster state's followers in every namespace (-A) and returns")
	say("once every target is in the new shape and every status says so:")
	if err := k.showContaining([]string{"all 3 switches in shape (3 active, 0 passive)"},
		"dynamic", "wait", "cdis/global-killswitch", "-A", "--timeout=60s"); err != nil {
		return err
	}
	for _, target := range [][2]string{{blog, "site"}, {docs, "site"}, {namespace, "landing"}} {
		if err := k.waitQuietIn(target[0], "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry-page", "ingress/"+target[1]); err != nil {
			return err
		}
	}
	say("The blog, the docs and the landing page are on the sorry page (STATEREF global-killswitch);")
	say("the switches that follow the namespaced killswitch of %s did not move:", namespace)
	if err := k.show("get", "dynamicingress", "-A"); err != nil {
		return err
	}
	if err := k.show(siteBackends...); err != nil {
		return err
	}
	fmt.Println()
	say("The notifiers of %s name global-killswitch too: its flip's summary counts every namespace:", namespace)
	if err := showNotifications(k, sink, "global-killswitch", flipNotifications("global-killswitch", "global-killswitch", "200", "503")); err != nil {
		return err
	}

	say("The platform team takes the label off %s: its switch no longer follows the kill switch.", docs)
	if err := k.show("label", "namespace", docs, "traffic.example.com/tier-"); err != nil {
		return err
	}
	if err := k.waitQuietIn(docs, "--for=condition=Ready=False", "dynamicingress/site"); err != nil {
		return err
	}
	notAdmitted := `ClusterDynamicIngressState "global-killswitch" does not admit namespace "docs": its spec.followers.namespaces admits the namespaces whose labels match "traffic.example.com/tier=public"`
	if err := k.showContaining([]string{"Ready=False StateNotAdmitted: " + notAdmitted, "Active=False StateNotAdmitted: " + notAdmitted},
		"get", "-n", docs, "dynamicingress", "site", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}`); err != nil {
		return err
	}
	if err := k.waitQuietIn(docs, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=docs", "ingress/site"); err != nil {
		return err
	}
	if err := k.waitQuietIn(blog, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry-page", "ingress/site"); err != nil {
		return err
	}
	say("kubectl dynamic wait still returns: it waits for the followers the grant admits, and says")
	say("which one it left out:")
	if err := k.showContaining([]string{"Left out 1 follower not admitted by the grant"},
		"dynamic", "wait", "cdis/global-killswitch", "-A", "--timeout=60s"); err != nil {
		return err
	}
	say("Its failurePolicy (Passive, the default) puts the docs back on their own service; the blog stays on")
	say("the sorry page. A new switch in %s that follows the kill switch is refused:", docs)
	if err := k.showRejectedIn(docs, fmt.Sprintf(followerSwitch, docs, "search"), "dynamicingress/search", "spec.stateRef: Forbidden: "+notAdmitted); err != nil {
		return err
	}

	say("The label is back: %s follows the kill switch again within seconds.", docs)
	if err := k.show("label", "namespace", docs, publicTier); err != nil {
		return err
	}
	if err := k.waitQuietIn(docs, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry-page", "ingress/site"); err != nil {
		return err
	}
	if err := k.waitQuietIn(docs, "--for=condition=Ready", "dynamicingress/site"); err != nil {
		return err
	}

	say("kubectl dynamic status without a state lists the states, both kinds, with their followers:")
	if err := k.showContaining([]string{"ClusterDynamicIngressState", "global-killswitch"}, "dynamic", "status", "-n", namespace); err != nil {
		return err
	}

	say("All clear:")
	if err := k.show("patch", "cdis", "global-killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`); err != nil {
		return err
	}
	for _, target := range [][3]string{{blog, "site", blog}, {docs, "site", docs}, {namespace, "landing", "landing"}} {
		if err := k.waitQuietIn(target[0], "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}="+target[2], "ingress/"+target[1]); err != nil {
			return err
		}
	}
	if err := k.show(siteBackends...); err != nil {
		return err
	}
	return windowOrKillSwitch(k)
}

// blogWindow is the blog team's own maintenance window, a fixed state, and
// its switch following both it and the platform's kill switch (anyOf).
const blogWindow = `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {name: blog-window}
spec:
  fixedResponse: {status: "200"}
---
apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata:
  name: site
spec:
  target: {name: site}
  anyOf:
  - name: platform
    stateRef: {kind: ClusterDynamicIngressState, name: global-killswitch}
    expected: {statusCode: "503"}
  - name: window
    state: blog-window
    expected: {statusCode: "503"}
  passiveIngress:
    template:
      spec: {rules: [{host: blog.example.com, http: {paths: [{path: /, pathType: Prefix,
              backend: {service: {name: blog, port: {number: 80}}}}]}}]}
  activeIngress:
    template:
      spec: {rules: [{host: blog.example.com, http: {paths: [{path: /, pathType: Prefix,
              backend: {service: {name: sorry-page, port: {number: 80}}}}]}}]}
`

// windowOrKillSwitch shows one switch following two states: the blog's own
// window OR the platform's kill switch (spec.anyOf).
func windowOrKillSwitch(k *kubectl) error {
	say("The blog team also has a maintenance window of its own. One switch obeys both, the window OR")
	say("the platform's kill switch, with spec.anyOf (docs/recipes.md, recipe 7):")
	if err := k.showApplyIn(blog, blogWindow, ""); err != nil {
		return err
	}
	if err := k.waitQuietIn(blog, "--for=jsonpath={.status.state}=anyOf(2)", "dynamicingress/site"); err != nil {
		return err
	}
	say("The blog opens its window; the kill switch is off:")
	if err := k.show("patch", "-n", blog, "dis", "blog-window", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`); err != nil {
		return err
	}
	if err := k.waitQuietIn(blog, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=sorry-page", "ingress/site"); err != nil {
		return err
	}
	if err := k.waitQuietIn(blog, "--for=condition=Active", "dynamicingress/site"); err != nil {
		return err
	}
	say("STATE shows anyOf(2); status.states says what each entry decided, Active names the one that did:")
	if err := k.show("get", "-n", blog, "dynamicingress", "site"); err != nil {
		return err
	}
	if err := k.showContaining([]string{"platform=False NotMatched", "window=True Matched", `Active: window matched (window: state "blog-window" responded 503 as expected)`},
		"get", "-n", blog, "dynamicingress", "site", "-o",
		`jsonpath={range .status.states[*]}{.name}={.matched} {.reason}{"\n"}{end}Active: {.status.conditions[?(@.type=="Active")].message}{"\n"}`); err != nil {
		return err
	}
	say("The window closes: the blog is back.")
	if err := k.show("patch", "-n", blog, "dis", "blog-window", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`); err != nil {
		return err
	}
	if err := k.waitQuietIn(blog, "--for=jsonpath={.spec.rules[0].http.paths[0].backend.service.name}=blog", "ingress/site"); err != nil {
		return err
	}
	return k.show(siteBackends...)
}
