package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// maxStateConcurrentReconciles is the largest
// --state-max-concurrent-reconciles the manager accepts.
const maxStateConcurrentReconciles = 256

// boundedFlags are the values of the manager's flags that have a range.
type boundedFlags struct {
	probeDenyCIDRs, probeAllowHosts string
	probeMaxBodyBytes               int64
	maxConcurrentReconciles         int
	stateMaxConcurrentReconciles    int
	kubeAPIQPS                      float64
	kubeAPIBurst                    int
	webhookPort                     int
	namespaces                      string
	flipStalledAfter                time.Duration
}

// checkFlags refuses flag values out of range (docs/operations.md), each
// error naming its flag. Left alone, each would fail later and less
// clearly: a body longer than a status holds makes every status write of
// its state fail and retry forever, and a zero that controller-runtime or
// client-go replaces with a default of their own is not what was asked for.
func checkFlags(f boundedFlags) error {
	var errs []error
	if _, err := probe.ParseGuard(f.probeDenyCIDRs, ""); err != nil {
		errs = append(errs, fmt.Errorf("--probe-deny-cidrs: %w", err))
	}
	if _, err := probe.ParseGuard("", f.probeAllowHosts); err != nil {
		errs = append(errs, fmt.Errorf("--probe-allow-hosts: %w", err))
	}
	if f.probeMaxBodyBytes < 1 || f.probeMaxBodyBytes > v1beta1.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("--probe-max-body-bytes=%d: must be from 1 to %d, the longest body a state's status holds", f.probeMaxBodyBytes, v1beta1.MaxBodyBytes))
	}
	if f.maxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles=%d: must be at least 1", f.maxConcurrentReconciles))
	}
	if f.stateMaxConcurrentReconciles < 1 || f.stateMaxConcurrentReconciles > maxStateConcurrentReconciles {
		errs = append(errs, fmt.Errorf("--state-max-concurrent-reconciles=%d: must be from 1 to %d", f.stateMaxConcurrentReconciles, maxStateConcurrentReconciles))
	}
	switch qps := f.kubeAPIQPS; {
	case math.IsNaN(qps) || math.IsInf(qps, 0):
		errs = append(errs, fmt.Errorf("--kube-api-qps=%v: must be a finite number", qps))
	case qps == 0:
		errs = append(errs, errors.New("--kube-api-qps=0: must not be 0, which client-go takes as its default of 5 per second; a negative value turns the limit off"))
	case qps > 0 && f.kubeAPIBurst < 1:
		errs = append(errs, fmt.Errorf("--kube-api-burst=%d: must be at least 1 with a positive --kube-api-qps", f.kubeAPIBurst))
	}
	if f.webhookPort < 1 || f.webhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port=%d: must be from 1 to 65535", f.webhookPort))
	}
	if f.flipStalledAfter < 5*time.Second || f.flipStalledAfter > time.Hour {
		errs = append(errs, fmt.Errorf("--flip-stalled-after=%s: must be from 5s to 1h", f.flipStalledAfter))
	}
	if _, err := parseNamespaces(f.namespaces); err != nil {
		errs = append(errs, fmt.Errorf("--namespaces=%s: %w", f.namespaces, err))
	}
	return errors.Join(errs...)
}

// parseNamespaces returns the namespaces of --namespaces, sorted and
// without repeats; none (an empty value) means every namespace.
func parseNamespaces(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var namespaces []string
	for _, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return nil, errors.New("an empty namespace name in the list")
		}
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	return slices.Compact(namespaces), nil
}

// serverTLSOptions configures the TLS of the webhook and metrics servers.
// Unless enableHTTP2, they offer HTTP/1.1 alone: HTTP/2's rapid reset and
// stream exhaustion (CVE-2023-44487, CVE-2023-39325) let one client tie up
// a server, and the API server and Prometheus speak HTTP/1.1 just as well.
func serverTLSOptions(enableHTTP2 bool) []func(*tls.Config) {
	if enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}
