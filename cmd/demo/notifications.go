package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
)

// The sink's two paths: one receives the CloudEvents of the notifier the
// demo creates, the other the Slack messages of config/samples' oncall.
const (
	cloudEventsPath = "/cloudevents"
	slackPath       = "/slack"
)

// notificationWait bounds the wait for a notification the story expects;
// the demo fails when one does not arrive within it.
const notificationWait = 30 * time.Second

// notificationSink is a small HTTP server on 127.0.0.1 that plays the
// receivers of notifications: it takes every POST and keeps it.
type notificationSink struct {
	server *http.Server
	url    string

	mu       sync.Mutex
	received []received
	// printed says which notifications were printed already: the
	// CloudEvents by id, the Slack messages by slackKey.
	printed map[string]bool
}

// received is one POST the sink took.
type received struct {
	path, contentType string
	body              []byte
}

// startNotificationSink serves the sink on a free port of 127.0.0.1.
func startNotificationSink() (*notificationSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &notificationSink{url: "http://" + l.Addr().String(), printed: map[string]bool{}}
	s.server = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(s.take)}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

func (s *notificationSink) Close() error { return s.server.Close() }

// take keeps a POST and answers 200, as a receiver that took it does.
func (s *notificationSink) take(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.received = append(s.received, received{path: r.URL.Path, contentType: r.Header.Get("Content-Type"), body: body})
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// cloudEvent is what the demo reads of a structured CloudEvent: the
// envelope's attributes and the data's facts it prints
// (docs/notifications.md, "Formats").
type cloudEvent struct {
	ID      string      `json:"id"`
	Type    string      `json:"type"`
	Source  string      `json:"source"`
	Subject string      `json:"subject"`
	Data    notify.Data `json:"data"`
}

// state names the event's state as the Slack text does: namespace/name,
// or the cluster state's name.
func (e cloudEvent) state() string {
	if e.Data.State.Namespace == "" {
		return e.Data.State.Name
	}
	return e.Data.State.Namespace + "/" + e.Data.State.Name
}

// about says whether the event is about the state or the switch name.
func (e cloudEvent) about(name string) bool {
	return e.Subject == name || e.Data.Switch != nil && e.Data.Switch.Name == name
}

// facts are the event's data in a few words, e.g. "demo/killswitch 200 →
// 503 (fixed)".
func (e cloudEvent) facts() string {
	d := e.Data
	switch e.Type {
	case "io.dynamicingress.statechanged":
		return fmt.Sprintf("%s %s → %s (%s)", e.state(), d.From, d.To, strings.ToLower(d.Cause))
	case "io.dynamicingress.flipcompleted":
		where := ""
		if d.Namespaces > 1 {
			where = fmt.Sprintf(" in %d namespaces", d.Namespaces)
		}
		return fmt.Sprintf("%s change %d (%s): %d switches%s after %s", e.state(), d.Sequence, d.To, d.Followers, where, d.CompletedAfter)
	case "io.dynamicingress.flipstalled":
		return fmt.Sprintf("%s change %d (%s): %d switches not in shape after %s", e.state(), d.Sequence, d.To, d.Remaining, d.StalledAfter)
	case "io.dynamicingress.probefailed":
		return fmt.Sprintf("%s not ready (%s): %s", e.state(), d.Reason, d.Message)
	case "io.dynamicingress.overridden":
		if d.Switch == nil {
			break
		}
		override := d.Override
		if override == "" {
			override = "no override"
		}
		return fmt.Sprintf("%s %s/%s → %s by %s at %s", d.Switch.Kind, d.Switch.Namespace, d.Switch.Name, override, d.By, d.At)
	}
	return e.Subject
}

// cloudEvents are the CloudEvents the sink took, once each: at least once
// means a retry may bring the same id again.
func (s *notificationSink) cloudEvents() ([]cloudEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cloudEvent
	seen := map[string]bool{}
	for _, r := range s.received {
		if r.path != cloudEventsPath {
			continue
		}
		if r.contentType != "application/cloudevents+json" {
			return nil, fmt.Errorf("the sink got a CloudEvent with Content-Type %q, want application/cloudevents+json", r.contentType)
		}
		var e cloudEvent
		if err := json.Unmarshal(r.body, &e); err != nil {
			return nil, fmt.Errorf("the sink got a CloudEvent it cannot read: %w: %s", err, r.body)
		}
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// slackTexts are the Slack messages the sink took, in order.
func (s *notificationSink) slackTexts() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.received {
		if r.path != slackPath {
			continue
		}
		var m struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(r.body, &m); err != nil {
			return nil, fmt.Errorf("the sink got a Slack message it cannot read: %w: %s", err, r.body)
		}
		out = append(out, m.Text)
	}
	return out, nil
}

// expectation is the notifications a step of the story waits for, among
// those not printed yet: a CloudEvent matching each of events, and a Slack
// text matching each of slack.
type expectation struct {
	events []func(cloudEvent) bool
	slack  []slackText
}

// slackText is a Slack text that begins with prefix and contains contains.
type slackText struct{ prefix, contains string }

func (t slackText) matches(text string) bool {
	return strings.HasPrefix(text, t.prefix) && strings.Contains(text, t.contains)
}

// missing says what of x has not arrived yet, "" when everything has.
func (s *notificationSink) missing(x expectation) (string, error) {
	events, err := s.cloudEvents()
	if err != nil {
		return "", err
	}
	texts, err := s.slackTexts()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i, want := range x.events {
		found := false
		for _, e := range events {
			found = found || !s.printed[e.ID] && want(e)
		}
		if !found {
			out = append(out, fmt.Sprintf("CloudEvent %d of %d", i+1, len(x.events)))
		}
	}
	for _, want := range x.slack {
		found := false
		for i, t := range texts {
			found = found || !s.printed[slackKey(i)] && want.matches(t)
		}
		if !found {
			out = append(out, fmt.Sprintf("Slack message %q", want.prefix+"..."+want.contains))
		}
	}
	return strings.Join(out, ", "), nil
}

// slackKey is the printed key of the i-th Slack message.
func slackKey(i int) string { return fmt.Sprintf("slack/%d", i) }

// await polls the sink until every notification of x has arrived, and
// fails after notificationWait.
func (s *notificationSink) await(x expectation) error {
	start := time.Now()
	deadline := start.Add(notificationWait)
	for {
		missing, err := s.missing(x)
		if err != nil {
			return err
		}
		if missing == "" {
			say("waited %.1fs for the notifications", time.Since(start).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s arrived at the notification sink within %s", missing, notificationWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// printNew prints the CloudEvents (deduplicated by id) and the Slack
// messages that arrived since the last call and are about, or mention,
// the state named about ("" for every notification).
func (s *notificationSink) printNew(about string) error {
	events, err := s.cloudEvents()
	if err != nil {
		return err
	}
	texts, err := s.slackTexts()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	say("The sink's %s got (CloudEvents, once per id):", cloudEventsPath)
	none := true
	for _, e := range events {
		if s.printed[e.ID] || about != "" && !e.about(about) {
			continue
		}
		s.printed[e.ID] = true
		none = false
		say("  %-32s %s", e.Type, e.facts())
		say("  %-32s id %s", "", e.ID)
	}
	if none {
		say("  nothing new")
	}
	say("and its %s (the Slack text as a channel shows it):", slackPath)
	none = true
	for i, t := range texts {
		key := slackKey(i)
		if s.printed[key] || about != "" && !mentions(t, about) {
			continue
		}
		s.printed[key] = true
		none = false
		say("  %s", t)
	}
	if none {
		say("  nothing new")
	}
	return nil
}

// mentions says whether a Slack text is about the state name: it begins
// with the state ("demo/killswitch: ...", "global-killswitch: ...").
func mentions(text, name string) bool {
	label, _, _ := strings.Cut(text, ": ")
	return label == name || strings.HasSuffix(label, "/"+name)
}

// stateChanged matches the StateChanged of the state name (its subject)
// from code to code.
func stateChanged(name, from, to string) func(cloudEvent) bool {
	return func(e cloudEvent) bool {
		return e.Type == "io.dynamicingress.statechanged" && e.Subject == name &&
			e.Data.From.String() == from && e.Data.To.String() == to
	}
}

// flipCompleted matches a FlipCompleted of the state name to code.
func flipCompleted(name, to string) func(cloudEvent) bool {
	return func(e cloudEvent) bool {
		return e.Type == "io.dynamicingress.flipcompleted" && e.Subject == name && e.Data.To.String() == to
	}
}

// overridden matches the Overridden of the switch name to override ("" once
// removed).
func overridden(name, override string) func(cloudEvent) bool {
	return func(e cloudEvent) bool {
		return e.Type == "io.dynamicingress.overridden" && e.Data.Switch != nil && e.Data.Switch.Name == name && e.Data.Override == override
	}
}

// auditNotifier is the DynamicIngressNotifier the demo creates: the
// platform's audit log hears of the kill switch and global-killswitch, as
// CloudEvents (the default format).
func (s *notificationSink) auditNotifier() string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressNotifier
metadata:
  name: audit
spec:
  states:
  - {kind: DynamicIngressState, name: killswitch}
  - {kind: ClusterDynamicIngressState, name: global-killswitch}
  sink:
    url: %s%s
`, s.url, cloudEventsPath)
}

// dnotifyDelivered prints a notifier's status.delivered, one line a state.
func dnotifyDelivered(name string) []string {
	return []string{"get", "-n", namespace, "dnotify", name, "-o",
		`jsonpath={range .status.delivered[*]}{.kind}/{.name}: sequence={.sequence} completed={.completed}{"\n"}{end}`}
}

// subscribe starts the story's notifications, once the states have
// answered: a notifier sending CloudEvents to the sink, and the samples'
// oncall (Slack) pointed at it.
func subscribe(k *kubectl, sink *notificationSink) error {
	fmt.Println()
	say("Notifications. The samples' notifier oncall (config/samples/notifier_oncall.yaml) posts Slack")
	say("messages about the kill switch and global-killswitch to hooks.example.com, a placeholder that")
	say("cannot be reached here: READY False above, and it tries again with backoff. A small HTTP sink on")
	say("127.0.0.1 plays the receivers: %s (the manager's address guard admits loopback in this demo).", sink.url)
	say("The platform's audit log takes CloudEvents, the default format. The states have answered, so a new")
	say("notifier starts from each state's newest change (status.delivered) and sends only what follows:")
	if err := k.showApply(sink.auditNotifier(), ""); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Ready", "dnotify/audit"); err != nil {
		return err
	}
	if err := k.show(dnotifyDelivered("audit")...); err != nil {
		return err
	}
	say("oncall was created with the samples: pointed at the sink's %s, it delivers what it kept while", slackPath)
	say("hooks.example.com could not be reached, oldest first (what it kept depends on when it first saw the states):")
	patch := fmt.Sprintf(`{"spec":{"sink":{"url":"%s%s"}}}`, sink.url, slackPath)
	if err := k.show("patch", "-n", namespace, "dnotify", "oncall", "--type", "merge", "-p", patch); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Ready", "dnotify/oncall"); err != nil {
		return err
	}
	if err := sink.printNew(""); err != nil {
		return err
	}
	return k.show("get", "-n", namespace, "dnotify")
}

// showNotifications waits for the notifications of a step (x), prints
// those that arrived about about (a state or a switch), the notifiers'
// columns and the audit notifier's status.delivered.
func showNotifications(k *kubectl, sink *notificationSink, about string, x expectation) error {
	if err := sink.await(x); err != nil {
		return err
	}
	if err := sink.printNew(about); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "dnotify"); err != nil {
		return err
	}
	return k.show(dnotifyDelivered("audit")...)
}

// flipNotifications are what the notifiers send about a flip of the state
// name (namespace/name in Slack's text) from one code to another: the
// change, and once every switch shows it, the flip's summary.
func flipNotifications(name, label, from, to string) expectation {
	return expectation{
		events: []func(cloudEvent) bool{stateChanged(name, from, to), flipCompleted(name, to)},
		slack: []slackText{{prefix: label + ": " + from + " → " + to + " (fixed)"},
			{prefix: label + ": change ", contains: "(" + to + ") shown by "}},
	}
}

// overrideNotifications are what the notifiers send when the switch name
// of the demo namespace gets override ("" once removed).
func overrideNotifications(name, override string) expectation {
	text := slackText{prefix: "DynamicIngress " + namespace + "/" + name + ": overridden to " + override + " by "}
	if override == "" {
		text.prefix = "DynamicIngress " + namespace + "/" + name + ": override removed by "
	}
	return expectation{events: []func(cloudEvent) bool{overridden(name, override)}, slack: []slackText{text}}
}

// overrideAudit prints the switch name's override audit annotations,
// which the webhook sets from the request's user when spec.override
// changes, and returns the time they say.
func (k *kubectl) overrideAudit(name string) (time.Time, error) {
	args := []string{"get", "-n", namespace, "di", name, "-o",
		`jsonpath=override-by={.metadata.annotations.ingress\.dynamicingress\.io/override-by}{"\n"}override-at={.metadata.annotations.ingress\.dynamicingress\.io/override-at}{"\n"}`}
	fmt.Printf("\n$ kubectl %s\n", quoteArgs(args))
	stdout, stderr, err := k.Run("", args...)
	fmt.Print(stdout, stderr)
	if err != nil {
		return time.Time{}, fmt.Errorf("kubectl %s: %w", quoteArgs(args), err)
	}
	_, at, _ := strings.Cut(stdout, "override-at=")
	return time.Parse(time.RFC3339, strings.TrimSpace(at))
}

// showOverride waits for the Overridden notifications of the switch name
// getting override ("" once removed), and prints them.
func showOverride(sink *notificationSink, name, override string) error {
	if err := sink.await(overrideNotifications(name, override)); err != nil {
		return err
	}
	return sink.printNew(name)
}
