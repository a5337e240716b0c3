package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// PinFlags are the flags of `override` that go with the pin: when it ends
// (For, a duration from now, or Until, an RFC 3339 time: at most one) and
// why (Reason; ReasonSet says whether --reason was given, so that an empty
// one is refused rather than dropped).
type PinFlags struct {
	For, Until string
	Reason     string
	ReasonSet  bool
}

// Pin is spec.overrideUntil (nil: the pin has no end) and
// spec.overrideReason ("" for none) the flags set with mode at now; a
// UsageError naming the flag when they cannot. With mode "" (none) no flag
// may be given: removing the pin removes its end and reason too.
func (f PinFlags) Pin(mode v1beta1.Mode, now time.Time) (*metav1.Time, string, error) {
	if mode == "" {
		if f.For != "" || f.Until != "" || f.ReasonSet {
			return nil, "", &UsageError{fmt.Errorf("--for, --until and --reason go with active or passive: none removes the pin, its end and its reason")}
		}
		return nil, "", nil
	}
	if f.ReasonSet && f.Reason == "" {
		return nil, "", &UsageError{fmt.Errorf("--reason must not be empty")}
	}
	var until *metav1.Time
	switch {
	case f.For != "" && f.Until != "":
		return nil, "", &UsageError{fmt.Errorf("--for and --until are exclusive: give one")}
	case f.For != "":
		d, err := time.ParseDuration(f.For)
		if err != nil {
			return nil, "", &UsageError{fmt.Errorf("--for %q is not a duration such as 2h or 30m", f.For)}
		}
		if d <= 0 {
			return nil, "", &UsageError{fmt.Errorf("--for %q is not a positive duration such as 2h or 30m", f.For)}
		}
		// The API keeps the time to the second: rounded up, so that the
		// pin lasts at least d.
		end := now.Add(d)
		if t := end.Truncate(time.Second); t.Before(end) {
			end = t.Add(time.Second)
		}
		until = &metav1.Time{Time: end}
	case f.Until != "":
		t, err := time.Parse(time.RFC3339, f.Until)
		if err != nil {
			return nil, "", &UsageError{fmt.Errorf("--until %q is not an RFC 3339 time such as 2026-12-02T03:00:00Z", f.Until)}
		}
		until = &metav1.Time{Time: t.Truncate(time.Second)}
	}
	return until, f.Reason, nil
}

// PinReport is a switch's pin as status shows it (its -o json shape:
// fields may be added, never renamed).
type PinReport struct {
	// Mode is the pinned mode: Active or Passive.
	Mode v1beta1.Mode `json:"mode"`
	// By and At are who last set or changed the pin, and when (RFC 3339).
	By string  `json:"by,omitempty"`
	At *string `json:"at,omitempty"`
	// Until is when the pin ends (RFC 3339), absent when it has no end.
	Until  *string `json:"until,omitempty"`
	Reason string  `json:"reason,omitempty"`
	// ApprovedBy is who approved the pin, for a pin that needed approval.
	ApprovedBy string `json:"approvedBy,omitempty"`
	// Phase is InEffect, Expired or PendingApproval.
	Phase v1beta1.OverridePhase `json:"phase"`
	// Left is how long a pin with an end, in effect or awaiting approval,
	// has to run; Ago how
	// long ago an expired one ended (both as "1h59m").
	Left string `json:"left,omitempty"`
	Ago  string `json:"ago,omitempty"`
}

// pinAt is sw's pin at now, nil when spec.override is not set: as
// status.override has it when that is the status of the pin in spec, else
// (the manager has not written it yet) as the manager will
// (decision.PinOf). The phase is the clock's: a pin whose until has passed
// is Expired, whether or not the manager has written so yet, as the mode
// the plugin decides does.
func pinAt(sw target.Switch, policy decision.PinPolicy, now time.Time) *v1beta1.OverrideStatus {
	spec := sw.SwitchSpec()
	if spec.Override == "" {
		return nil
	}
	pin := sw.SwitchStatus().Override
	if pin == nil || pin.Mode != spec.Override || pin.Reason != spec.OverrideReason || !sameTime(pin.Until, spec.OverrideUntil) ||
		pin.Phase == v1beta1.OverridePhasePendingApproval && decision.ApprovedBy(sw.GetAnnotations()) != "" {
		pin = decision.PinOf(sw, policy, now).Status
	}
	pin = pin.DeepCopy()
	if pin.Until != nil && !now.Before(pin.Until.Time) {
		pin.Phase = v1beta1.OverridePhaseExpired
	}
	return pin
}

// sameTime says whether a and b are the same time to the second, as the
// API keeps them (nil only as nil).
func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Unix() == b.Unix()
}

// followedPolicy is the override policy of the states sw follows that
// the user may read: a state that is missing, or that the user may not
// read (or could not be read), adds nothing.
func followedPolicy(ctx context.Context, c client.Reader, sw target.Switch) decision.PinPolicy {
	policies, _ := follow.Policies(ctx, c, sw.GetNamespace(), sw.SwitchSpec())
	return decision.MergePolicies(policies)
}

// pinPolicy is the override policy of the item's states, with state as
// the snapshot's own.
func (it Item) pinPolicy(state *v1beta1.DynamicIngressState) decision.PinPolicy {
	if it.Entries == nil {
		if state == nil {
			return decision.PinPolicy{}
		}
		return decision.MergePolicies([]decision.NamedPolicy{{State: it.Switch.SwitchSpec().State.String(), Policy: state.Spec.OverridePolicy}})
	}
	var policies []decision.NamedPolicy
	for i, e := range it.decisionEntries(state) {
		if e.State != nil {
			policies = append(policies, decision.NamedPolicy{State: it.Entries[i].Ref.String(), Policy: e.State.Spec.OverridePolicy})
		}
	}
	return decision.MergePolicies(policies)
}

// decided is sw as the operator decides it at now: without its pin when
// the pin does not hold (it ended, or waits for approval).
func decided(sw target.Switch, policy decision.PinPolicy, now time.Time) target.Switch {
	if pin := pinAt(sw, policy, now); pin != nil && pin.Phase != v1beta1.OverridePhaseInEffect {
		return decision.Unpinned(sw)
	}
	return sw
}

// pinReport is the report of pin at now; nil for none.
func pinReport(pin *v1beta1.OverrideStatus, now time.Time) *PinReport {
	if pin == nil {
		return nil
	}
	out := &PinReport{Mode: pin.Mode, By: pin.By, At: rfc3339(pin.At), Until: rfc3339(pin.Until), Reason: pin.Reason, ApprovedBy: pin.ApprovedBy, Phase: pin.Phase}
	if pin.Until != nil {
		switch pin.Phase {
		case v1beta1.OverridePhaseInEffect, v1beta1.OverridePhasePendingApproval:
			out.Left = shortDuration(pin.Until.Sub(now))
		case v1beta1.OverridePhaseExpired:
			out.Ago = shortDuration(now.Sub(pin.Until.Time))
		}
	}
	return out
}

// rfc3339 is t in RFC 3339, UTC, to the second; nil for nil.
func rfc3339(t *metav1.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// Column is what the OVERRIDE column shows: the mode as the override
// command takes it, and the phase when the pin does not hold
// ("active (expired)").
func (p *PinReport) Column() string {
	if p == nil {
		return "none"
	}
	mode := overrideName(p.Mode)
	switch p.Phase {
	case v1beta1.OverridePhaseExpired:
		return mode + " (expired)"
	case v1beta1.OverridePhasePendingApproval:
		return mode + " (pending approval)"
	}
	return mode
}

// Line says what the pin is, for the lines under status's table:
// `active pinned by alice until 2026-12-02T03:00:00Z (in 1h59m): INC-1234`,
// `active pinned by alice ended at 2026-12-02T01:00:00Z (expired 5m ago):
// INC-1200`, `passive pinned by bob with no end, approved by carol`.
func (p *PinReport) Line() string {
	var b strings.Builder
	b.WriteString(overrideName(p.Mode) + " pinned")
	if p.By != "" {
		b.WriteString(" by " + p.By)
	}
	switch {
	case p.Until == nil:
		b.WriteString(" with no end")
	case p.Phase == v1beta1.OverridePhaseExpired:
		fmt.Fprintf(&b, " ended at %s (expired %s ago)", *p.Until, p.Ago)
	case p.Left != "":
		fmt.Fprintf(&b, " until %s (in %s)", *p.Until, p.Left)
	default:
		b.WriteString(" until " + *p.Until)
	}
	if p.Phase == v1beta1.OverridePhasePendingApproval {
		b.WriteString(", pending approval")
	}
	if p.ApprovedBy != "" {
		b.WriteString(", approved by " + p.ApprovedBy)
	}
	if p.Reason != "" {
		b.WriteString(": " + p.Reason)
	}
	return b.String()
}

// shortDuration is d in whole seconds (cut, as a countdown counts: a pin
// that ends in 1h59m59.6s ends in 1h59m59s, not 2h), without the units
// that are zero at its end: 2h, 1h59m, 1h0m30s, 45s.
func shortDuration(d time.Duration) string {
	s := max(d, 0).Truncate(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// OverrideColumn is what status's OVERRIDE column shows for the switch:
// spec.override as the override command takes it (none, active,
// passive), and the pin's phase when it does not hold (Column).
func (s SwitchReport) OverrideColumn() string {
	if s.Pin == nil {
		return s.Override
	}
	return s.Pin.Column()
}

// PinLine says what pins the switch, for the lines under status's table:
// `DynamicIngress "storefront": active pinned by alice until
// 2026-12-02T03:00:00Z (in 1h59m): INC-1234` (Line); "" when it is not
// pinned.
func (s SwitchReport) PinLine() string {
	if s.Pin == nil {
		return ""
	}
	name := fmt.Sprintf("%q", s.Name)
	if s.Namespace != "" {
		name = s.Namespace + "/" + s.Name
	}
	return fmt.Sprintf("%s %s: %s", s.Kind, name, s.Pin.Line())
}
