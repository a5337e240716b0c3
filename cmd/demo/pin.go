package main

import (
	"time"
)

// pinThatEnds pins the storefront to its sorry page for 20 seconds with a
// reason: the pin ends by itself, and users get the storefront again with
// no one removing it.
func pinThatEnds(k *kubectl, traffic *dataPlane) error {
	title("12. A pin that ends by itself: the sorry page for 20s, with a reason")
	say("During an incident a pin should not outlive it: --for sets spec.overrideUntil, --reason spec.overrideReason.")
	if err := k.showContaining([]string{`until `, `INC-42`},
		"dynamic", "override", "dynamicingress/storefront", "active", "--for", "20s", "--reason", "INC-42 payment provider down", "-n", namespace); err != nil {
		return err
	}
	pinned := time.Now()
	s := <-traffic.watchFor(sorryPage, pinned)
	if s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the sorry page %.1fs after the pin: %s", s.after.Seconds(), s.seen)
	if err := k.waitQuiet("--for=jsonpath={.status.override.phase}=InEffect", "di/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "custom-columns=NAME:.metadata.name,OVERRIDE:.status.override.summary,UNTIL:.status.override.until,REASON:.status.override.reason,BY:.status.override.by"); err != nil {
		return err
	}
	say("Nobody removes it: 20s later the storefront follows its states again.")
	s = <-traffic.watchFor(storefrontPage, pinned)
	if s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the storefront again %.1fs after the pin (--for 20s): %s", s.after.Seconds(), s.seen)
	if err := k.waitQuiet("--for=jsonpath={.status.override.phase}=Expired", "di/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "wide"); err != nil {
		return err
	}
	say("The pin stays in spec for the audit (status.override says Expired), and one OverrideExpired event says it ended:")
	return k.show("get", "-n", namespace, "events", "--field-selector", "reason=OverrideExpired,involvedObject.name=storefront", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
}
