package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// pinNeedsApproval has the platform team make taking the shop down by hand
// a two-person decision (overridePolicy.approval on the kill switch):
// alice's pin to the sorry page waits, she cannot approve it herself, bob
// approves it and users get the sorry page; then the pin and the policy
// are removed, for the next round of the story.
func pinNeedsApproval(k *kubectl, traffic *dataPlane) error {
	title("13. A pin that needs a second person: alice asks, bob approves")
	say("The platform team makes taking the shop down by hand a two-person decision:")
	if err := k.show("patch", "-n", namespace, "dis", "killswitch", "--type=merge", "-p", `{"spec":{"overridePolicy":{"approval":{"modes":["Active"]}}}}`); err != nil {
		return err
	}
	say("alice and bob are on call: both may pin switches and read states; only bob has the custom verb approve.")
	for _, args := range [][]string{
		{"create", "clusterrole", "demo-oncall", "--verb=get,list,watch,patch", "--resource=dynamicingresses.ingress.dynamicingress.io,dynamicingressstates.ingress.dynamicingress.io"},
		{"create", "clusterrole", "demo-pin-approver", "--verb=approve", "--resource=dynamicingresses.ingress.dynamicingress.io"},
		{"create", "rolebinding", "oncall", "-n", namespace, "--clusterrole=demo-oncall", "--user=alice", "--user=bob"},
		{"create", "rolebinding", "bob-approves", "-n", namespace, "--clusterrole=demo-pin-approver", "--user=bob"},
	} {
		if err := k.show(args...); err != nil {
			return err
		}
	}
	if err := k.waitCan("bob", "approve", "dynamicingresses.ingress.dynamicingress.io"); err != nil {
		return err
	}
	if err := k.waitCan("alice", "patch", "dynamicingresses.ingress.dynamicingress.io"); err != nil {
		return err
	}
	if err := k.showContaining([]string{"awaits approval by a second person"},
		"dynamic", "override", "dynamicingress/storefront", "active", "--for", "2m", "--reason", "INC-43 card fraud spike", "-n", namespace, "--as=alice"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.status.override.phase}=PendingApproval", "di/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "wide"); err != nil {
		return err
	}
	say("The storefront still follows its states: users keep the shop. alice cannot approve her own pin:")
	if err := k.showRefused([]string{`"alice" set the pin and cannot approve it`}, "dynamic", "approve", "dynamicingress/storefront", "-n", namespace, "--as=alice"); err != nil {
		return err
	}
	if err := k.showContaining([]string{"approved by bob"}, "dynamic", "approve", "dynamicingress/storefront", "-n", namespace, "--as=bob"); err != nil {
		return err
	}
	approved := time.Now()
	s := <-traffic.watchFor(sorryPage, approved)
	if s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the sorry page %.1fs after bob's approval: %s", s.after.Seconds(), s.seen)
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "custom-columns=NAME:.metadata.name,OVERRIDE:.status.override.summary,BY:.status.override.by,APPROVED-BY:.status.override.approvedBy,REASON:.status.override.reason"); err != nil {
		return err
	}
	say("The incident is over: alice removes the pin, and the platform team its policy.")
	if err := k.show("dynamic", "override", "dynamicingress/storefront", "none", "-n", namespace, "--as=alice"); err != nil {
		return err
	}
	removed := time.Now()
	if s = <-traffic.watchFor(storefrontPage, removed); s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the storefront again %.1fs after the pin was removed: %s", s.after.Seconds(), s.seen)
	return k.show("patch", "-n", namespace, "dis", "killswitch", "--type=json", "-p", `[{"op":"remove","path":"/spec/overridePolicy"}]`)
}

// waitCan waits until the API server's authorizer lets user do verb on
// resource in the demo namespace (it sees a new binding a moment later).
func (k *kubectl) waitCan(user, verb, resource string) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := k.Command("", "auth", "can-i", verb, resource, "-n", namespace, "--as="+user).Output()
		if strings.TrimSpace(string(out)) == "yes" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s may not %s %s 30s after the RoleBinding: %q", user, verb, resource, out)
		}
	}
}

// showRefused prints a kubectl command that must fail, and its output,
// which must say each of want.
func (k *kubectl) showRefused(want []string, args ...string) error {
	fmt.Printf("\n$ kubectl %s\n", quoteArgs(args))
	out, err := k.Command("", args...).CombinedOutput()
	fmt.Print(string(out))
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("kubectl %s was not refused (err %v)", quoteArgs(args), err)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			return fmt.Errorf("kubectl %s did not print %q", quoteArgs(args), w)
		}
	}
	say("kubectl exited with code %d.", exit.ExitCode())
	return nil
}
