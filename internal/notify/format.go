package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// Content types of the two formats.
const (
	// CloudEventsContentType is a structured CloudEvent in JSON.
	CloudEventsContentType = "application/cloudevents+json"
	// SlackContentType is a Slack incoming webhook's message.
	SlackContentType = "application/json"
)

// CloudEventType is the CloudEvents type of a notification type:
// "io.dynamicingress." and the type in lower case.
func CloudEventType(t v1beta1.NotificationType) string {
	return "io.dynamicingress." + strings.ToLower(string(t))
}

// Body is e written in format, and its content type.
func Body(e Event, format v1beta1.SinkFormat) ([]byte, string, error) {
	if format == v1beta1.SinkFormatSlack {
		b, err := json.Marshal(map[string]string{"text": SlackText(e)})
		return b, SlackContentType, err
	}
	b, err := CloudEvent(e)
	return b, CloudEventsContentType, err
}

// CloudEvent is e as a CloudEvents 1.0 event in structured JSON mode. The
// envelope is the CloudEvents SDK's (github.com/cloudevents/sdk-go), which
// checks the attributes the specification requires.
func CloudEvent(e Event) ([]byte, error) {
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(e.ID)
	ev.SetSource(e.Source)
	ev.SetType(CloudEventType(e.Type))
	ev.SetTime(e.Time.UTC())
	ev.SetSubject(e.Subject)
	if err := ev.SetData(event.ApplicationJSON, e.Data); err != nil {
		return nil, err
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(ev)
}

// SlackText is e in one line a person can read, e.g.
// "global-killswitch: 200 → 503 (probe)".
func SlackText(e Event) string {
	d := e.Data
	var text string
	switch e.Type {
	case v1beta1.NotificationStateChanged:
		switch {
		case d.From == nil && d.Sequence <= 1:
			text = fmt.Sprintf("%s: first response %s (%s)", stateLabel(d.State), d.To, causeText(d.Cause))
		case d.From == nil:
			// The change before it left the history.
			text = fmt.Sprintf("%s: now %s (%s)", stateLabel(d.State), d.To, causeText(d.Cause))
		default:
			text = fmt.Sprintf("%s: %s → %s (%s)", stateLabel(d.State), d.From, d.To, causeText(d.Cause))
		}
	case v1beta1.NotificationFlipCompleted:
		text = fmt.Sprintf("%s: change %d (%s) shown by %s after %s", stateLabel(d.State), d.Sequence, d.To, followers(d.Followers, d.Namespaces), d.CompletedAfter)
	case v1beta1.NotificationFlipStalled:
		text = fmt.Sprintf("%s: change %d (%s) not shown by %d %s after %s", stateLabel(d.State), d.Sequence, d.To, d.Remaining, plural(d.Remaining, "switch", "switches"), d.StalledAfter)
		if len(d.Switches) > 0 {
			text += ", among them " + strings.Join(d.Switches, ", ")
		}
	case v1beta1.NotificationProbeFailed:
		text = fmt.Sprintf("%s: not ready (%s): %s", stateLabel(d.State), d.Reason, d.Message)
	case v1beta1.NotificationOverridden:
		if d.Override == "" {
			text = fmt.Sprintf("%s: override removed by %s at %s", switchLabel(d.Switch), d.By, d.At)
		} else {
			text = fmt.Sprintf("%s: overridden to %s by %s at %s", switchLabel(d.Switch), d.Override, d.By, d.At)
		}
		if d.Until != "" {
			text += " until " + d.Until
		}
		switch {
		case d.ApprovedBy != "":
			text += ", approved by " + d.ApprovedBy
		case d.Phase == string(v1beta1.OverridePhasePendingApproval):
			text += ", awaiting approval"
		}
		if d.Reason != "" {
			text += ": " + d.Reason
		}
	case v1beta1.NotificationOverrideExpired:
		pin := "the pin to " + d.Override
		if d.Reason != "" {
			pin += " (" + d.Reason + ")"
		}
		follows := d.Follows
		if follows == "" {
			follows = "its state"
		}
		text = fmt.Sprintf("%s: %s ended at %s (overrideUntil); following %s again", switchLabel(d.Switch), pin, d.Until, follows)
	default:
		text = fmt.Sprintf("%s: %s", stateLabel(d.State), e.Type)
	}
	if d.Dropped > 0 {
		text += fmt.Sprintf(" (%d earlier %s left the state's history before %s sent)", d.Dropped,
			plural(int(d.Dropped), "change", "changes"), plural(int(d.Dropped), "it was", "they were"))
	}
	return text
}

// switchLabel names a switch: "DynamicIngress shop/web".
func switchLabel(s *SwitchName) string {
	return s.Kind + " " + s.Namespace + "/" + s.Name
}

// causeText is a change's cause in words: "probe", "no response".
func causeText(cause string) string {
	if cause == string(v1beta1.HistoryCauseNoResponse) {
		return "no response"
	}
	return strings.ToLower(cause)
}

// stateLabel names a state: "namespace/name", or the cluster state's name.
func stateLabel(s StateName) string {
	if s.Namespace == "" {
		return s.Name
	}
	return s.Namespace + "/" + s.Name
}

// String is a response's status code, "no response" when the state had
// none, "none" when the notification carries no response.
func (c *Code) String() string {
	switch {
	case c == nil:
		return "none"
	case c.StatusCode == "":
		return "no response"
	}
	return c.StatusCode
}

// followers says how many switches in how many namespaces.
func followers(n, namespaces int32) string {
	s := fmt.Sprintf("%d %s", n, plural(int(n), "switch", "switches"))
	if namespaces > 1 {
		s += fmt.Sprintf(" in %d namespaces", namespaces)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
