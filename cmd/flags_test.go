package main

import (
	"crypto/tls"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// defaultFlags are the manager's defaults.
func defaultFlags() boundedFlags {
	return boundedFlags{
		probeDenyCIDRs: probe.DefaultDenyCIDRs, probeMaxBodyBytes: 10240,
		maxConcurrentReconciles: 32, stateMaxConcurrentReconciles: 8,
		kubeAPIQPS: -1, kubeAPIBurst: 400, webhookPort: 9443, flipStalledAfter: time.Minute,
	}
}

func TestCheckFlags(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*boundedFlags)
		wantErr string
	}{
		{name: "the defaults", mutate: func(*boundedFlags) {}},
		{name: "the largest body a status holds", mutate: func(f *boundedFlags) { f.probeMaxBodyBytes = 65536 }},
		{name: "one byte of body", mutate: func(f *boundedFlags) { f.probeMaxBodyBytes = 1 }},
		{name: "256 state workers", mutate: func(f *boundedFlags) { f.stateMaxConcurrentReconciles = 256 }},
		{name: "a rate limit", mutate: func(f *boundedFlags) { f.kubeAPIQPS, f.kubeAPIBurst = 50.5, 100 }},
		{name: "no rate limit and no burst", mutate: func(f *boundedFlags) { f.kubeAPIQPS, f.kubeAPIBurst = -1, 0 }},
		{name: "two namespaces", mutate: func(f *boundedFlags) { f.namespaces = "shop, team-a" }},
		{name: "no deny list, an allow list", mutate: func(f *boundedFlags) {
			f.probeDenyCIDRs, f.probeAllowHosts = "", "flags.example.com,*.internal.example.com"
		}},
		{
			name:    "a body longer than a status holds",
			mutate:  func(f *boundedFlags) { f.probeMaxBodyBytes = 65537 },
			wantErr: "--probe-max-body-bytes=65537: must be from 1 to 65536, the longest body a state's status holds",
		},
		{name: "flips stalled after 5s", mutate: func(f *boundedFlags) { f.flipStalledAfter = 5 * time.Second }},
		{name: "flips stalled after an hour", mutate: func(f *boundedFlags) { f.flipStalledAfter = time.Hour }},
		{
			name:    "flips stalled after less than 5s",
			mutate:  func(f *boundedFlags) { f.flipStalledAfter = 4 * time.Second },
			wantErr: "--flip-stalled-after=4s: must be from 5s to 1h",
		},
		{
			name:    "flips stalled after more than an hour",
			mutate:  func(f *boundedFlags) { f.flipStalledAfter = time.Hour + time.Second },
			wantErr: "--flip-stalled-after=1h0m1s: must be from 5s to 1h",
		},
		{
			name:    "no body",
			mutate:  func(f *boundedFlags) { f.probeMaxBodyBytes = 0 },
			wantErr: "--probe-max-body-bytes=0: must be from 1 to 65536, the longest body a state's status holds",
		},
		{
			name:    "too many state workers",
			mutate:  func(f *boundedFlags) { f.stateMaxConcurrentReconciles = 257 },
			wantErr: "--state-max-concurrent-reconciles=257: must be from 1 to 256",
		},
		{
			name:    "no state workers",
			mutate:  func(f *boundedFlags) { f.stateMaxConcurrentReconciles = 0 },
			wantErr: "--state-max-concurrent-reconciles=0: must be from 1 to 256",
		},
		{
			name:    "no switch workers",
			mutate:  func(f *boundedFlags) { f.maxConcurrentReconciles = 0 },
			wantErr: "--max-concurrent-reconciles=0: must be at least 1",
		},
		{
			name:    "a malformed CIDR",
			mutate:  func(f *boundedFlags) { f.probeDenyCIDRs = "127.0.0.0/8,10.0.0.0/33" },
			wantErr: `--probe-deny-cidrs: invalid CIDR "10.0.0.0/33": netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`,
		},
		{
			name:    "a malformed host pattern",
			mutate:  func(f *boundedFlags) { f.probeAllowHosts = "flags.example.com,api.*.example.com" },
			wantErr: `--probe-allow-hosts: invalid host pattern "api.*.example.com": "*" is only allowed as the whole first label, as in *.example.com`,
		},
		{
			name:    "a QPS of 0",
			mutate:  func(f *boundedFlags) { f.kubeAPIQPS = 0 },
			wantErr: "--kube-api-qps=0: must not be 0, which client-go takes as its default of 5 per second; a negative value turns the limit off",
		},
		{
			name:    "an infinite QPS",
			mutate:  func(f *boundedFlags) { f.kubeAPIQPS = math.Inf(1) },
			wantErr: "--kube-api-qps=+Inf: must be a finite number",
		},
		{
			name:    "a rate limit without burst",
			mutate:  func(f *boundedFlags) { f.kubeAPIQPS, f.kubeAPIBurst = 50, 0 },
			wantErr: "--kube-api-burst=0: must be at least 1 with a positive --kube-api-qps",
		},
		{
			name:    "webhook port 0",
			mutate:  func(f *boundedFlags) { f.webhookPort = 0 },
			wantErr: "--webhook-port=0: must be from 1 to 65535",
		},
		{
			name:    "a malformed namespace",
			mutate:  func(f *boundedFlags) { f.namespaces = "shop,Team_A" },
			wantErr: `--namespaces=shop,Team_A: "Team_A" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		},
		{
			name:    "an empty namespace in the list",
			mutate:  func(f *boundedFlags) { f.namespaces = "shop,,team-a" },
			wantErr: `--namespaces=shop,,team-a: an empty namespace name in the list`,
		},
		{
			name: "every problem at once, one line each",
			mutate: func(f *boundedFlags) {
				f.probeMaxBodyBytes, f.stateMaxConcurrentReconciles, f.webhookPort = 1<<20, 1000, 70000
			},
			wantErr: "--probe-max-body-bytes=1048576: must be from 1 to 65536, the longest body a state's status holds\n" +
				"--state-max-concurrent-reconciles=1000: must be from 1 to 256\n" +
				"--webhook-port=70000: must be from 1 to 65535",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := defaultFlags()
			tt.mutate(&f)
			gotErr := ""
			if err := checkFlags(f); err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMaxBodyBytesIsWhatAStateHolds checks that the largest
// --probe-max-body-bytes is the CRD's bound on status.body (and on a fixed
// body): a larger flag would let the prober store bodies that every status
// write then fails on.
func TestMaxBodyBytesIsWhatAStateHolds(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "ingress.dynamicingress.io_dynamicingressstates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	want := int64(v1beta1.MaxBodyBytes)
	for name, n := range map[string]*int64{
		"status.body":             schema.Properties["status"].Properties["body"].MaxLength,
		"spec.fixedResponse.body": schema.Properties["spec"].Properties["fixedResponse"].Properties["body"].MaxLength,
	} {
		if n == nil {
			t.Errorf("the CRD's %s has no maxLength, want %d", name, want)
		} else if *n != want {
			t.Errorf("the CRD's maxLength of %s is %d, want %d", name, *n, want)
		}
	}
	f := defaultFlags()
	if f.probeMaxBodyBytes = want; checkFlags(f) != nil {
		t.Errorf("--probe-max-body-bytes=%d refused: %v", want, checkFlags(f))
	}
	if f.probeMaxBodyBytes = want + 1; checkFlags(f) == nil {
		t.Errorf("--probe-max-body-bytes=%d accepted", want+1)
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tt := range []struct {
		flag string
		want []string
	}{
		{"", nil},
		{" ", nil},
		{"shop", []string{"shop"}},
		{"team-a, shop,team-a", []string{"shop", "team-a"}},
	} {
		got, err := parseNamespaces(tt.flag)
		if err != nil {
			t.Errorf("--namespaces=%q: %v", tt.flag, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("--namespaces=%q (-want +got):\n%s", tt.flag, diff)
		}
	}
}

func TestServerTLSOptions(t *testing.T) {
	for _, tt := range []struct {
		enableHTTP2 bool
		want        []string
	}{
		{false, []string{"http/1.1"}},
		{true, []string{"h2"}},
	} {
		// What controller-runtime's webhook and metrics servers start from.
		cfg := &tls.Config{NextProtos: []string{"h2"}}
		for _, opt := range serverTLSOptions(tt.enableHTTP2) {
			opt(cfg)
		}
		if diff := cmp.Diff(tt.want, cfg.NextProtos); diff != "" {
			t.Errorf("--enable-http2=%t: ALPN protocols (-want +got):\n%s", tt.enableHTTP2, diff)
		}
	}
}
