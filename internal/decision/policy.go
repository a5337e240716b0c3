package decision

import (
	"fmt"
	"strings"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// PinPolicy is the override policy a switch's pins are held to: the
// strictest of the policies of the states it follows (docs/behaviour.md,
// "Override policies"). Zero holds a pin to nothing.
type PinPolicy struct {
	// MaxDuration is the shortest maxDuration, 0 when none has one;
	// MaxDurationFrom names the state it comes from.
	MaxDuration     time.Duration
	MaxDurationFrom string
	// RequireReason is set when any state requires a reason;
	// RequireReasonFrom names the first that does.
	RequireReason     bool
	RequireReasonFrom string
	// Approval is the union of the approval modes, each with the first
	// state that names it.
	Approval map[v1beta1.Mode]string
}

// NeedsApproval names the state whose policy makes a pin to mode wait for
// a second person, "" when none does.
func (p PinPolicy) NeedsApproval(mode v1beta1.Mode) string {
	return p.Approval[mode]
}

// NamedPolicy is a followed state's policy with how messages name the
// state (`DynamicIngressState "killswitch"`).
type NamedPolicy struct {
	State  string
	Policy *v1beta1.OverridePolicy
}

// MergePolicies is the strictest of policies: the shortest maxDuration,
// a reason when any requires one, and the union of the approval modes.
func MergePolicies(policies []NamedPolicy) PinPolicy {
	var out PinPolicy
	for _, p := range policies {
		if p.Policy == nil {
			continue
		}
		if d := p.Policy.MaxDuration; d != nil && d.Duration > 0 && (out.MaxDuration == 0 || d.Duration < out.MaxDuration) {
			out.MaxDuration, out.MaxDurationFrom = d.Duration, p.State
		}
		if p.Policy.RequireReason && !out.RequireReason {
			out.RequireReason, out.RequireReasonFrom = true, p.State
		}
		if a := p.Policy.Approval; a != nil {
			for _, mode := range a.Modes {
				if _, named := out.Approval[mode]; named {
					continue
				}
				if out.Approval == nil {
					out.Approval = map[v1beta1.Mode]string{}
				}
				out.Approval[mode] = p.State
			}
		}
	}
	return out
}

// Breaks are the ways a pin made at at breaks the policy, each naming the
// state whose policy it breaks, keyed by the field at fault
// ("overrideUntil", "overrideReason"); none for a switch without a pin.
func (p PinPolicy) Breaks(spec v1beta1.SwitchSpec, at time.Time) map[string]string {
	if spec.Override == "" {
		return nil
	}
	out := map[string]string{}
	if p.MaxDuration > 0 {
		limit := DurationText(p.MaxDuration)
		switch {
		case spec.OverrideUntil == nil:
			out["overrideUntil"] = fmt.Sprintf("%s has overridePolicy.maxDuration %s: a pin must carry overrideUntil, at most %s ahead", p.MaxDurationFrom, limit, limit)
		case spec.OverrideUntil.Sub(at) > p.MaxDuration:
			out["overrideUntil"] = fmt.Sprintf("%s has overridePolicy.maxDuration %s: a pin must end at most %s ahead, by %s", p.MaxDurationFrom, limit, limit,
				at.Add(p.MaxDuration).UTC().Format(time.RFC3339))
		}
	}
	if p.RequireReason && strings.TrimSpace(spec.OverrideReason) == "" {
		out["overrideReason"] = fmt.Sprintf("%s has overridePolicy.requireReason: a pin must say why in overrideReason", p.RequireReasonFrom)
	}
	return out
}

// DurationText is a duration as a user writes it in a spec: 250ms, 10s,
// 30m, 4h, 1h30m (not 30m0s).
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
