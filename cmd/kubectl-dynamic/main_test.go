package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestUsageAndErrors runs command lines that fail before the cluster is
// reached: exit status 2 for usage, 1 for errors, and one line on stderr.
func TestUsageAndErrors(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"status", "a", "b"}, 2, "error: expected at most one STATE, got 2 arguments"},
		{[]string{"wait"}, 2, "error: expected one STATE, got 0 arguments"},
		{[]string{"history"}, 2, "error: expected one STATE, got 0 arguments"},
		{[]string{"history", "x", "-o", "wide"}, 2, `error: unable to match a printer suitable for the output format "wide", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml`},
		{[]string{"history", "x/y/z"}, 2, `error: "x/y/z": name a state as NAME, dis/NAME or cdis/NAME`},
		{[]string{"launch"}, 2, `error: unknown command "launch" for "kubectl dynamic"`},
		{[]string{"status", "x", "--colour"}, 2, "error: unknown flag: --colour"},
		{[]string{"status", "x", "-o", "wide"}, 2, `error: unable to match a printer suitable for the output format "wide", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml`},
		{[]string{"preview", "x"}, 2, "error: give exactly one of --status CODE or --at RFC3339"},
		{[]string{"preview", "x", "--status", "503", "--at", "2026-12-24T00:00:00Z"}, 2, "error: give exactly one of --status CODE or --at RFC3339"},
		{[]string{"preview", "x", "--status", "5xx"}, 2, `error: --status "5xx" is not an HTTP status code (100-599)`},
		{[]string{"preview", "x", "--at", "tomorrow"}, 2, `error: --at "tomorrow" is not an RFC 3339 time such as 2026-12-24T00:00:00Z`},
		{[]string{"preview", "x", "--at", "2026-12-24T00:00:00Z", "--body", "{}"}, 2, "error: --body and --body-file go with --status, not --at"},
		{[]string{"preview", "x", "--status", "200", "--body-file", "/nonexistent/body.json"}, 1, "error: reading --body-file: open /nonexistent/body.json: no such file or directory"},
		{[]string{"wait", "x", "--timeout", "0s"}, 2, "error: --timeout must be positive"},
		{[]string{"wait", "x", "--for=ready"}, 2, `error: --for must be shape or served, not "ready"`},
		{[]string{"override", "storefront", "active"}, 2, `error: "storefront": name the switch as KIND/NAME, e.g. di/storefront`},
		{[]string{"override", "di/storefront", "on"}, 2, `error: mode "on": use active, passive or none`},
		{[]string{"override", "di/storefront", "active", "--for", "2h", "--until", "2026-12-02T03:00:00Z"}, 2, "error: --for and --until are exclusive: give one"},
		{[]string{"override", "di/storefront", "active", "--for", "2 hours"}, 2, `error: --for "2 hours" is not a duration such as 2h or 30m`},
		{[]string{"override", "di/storefront", "active", "--until", "tomorrow"}, 2, `error: --until "tomorrow" is not an RFC 3339 time such as 2026-12-02T03:00:00Z`},
		{[]string{"override", "di/storefront", "active", "--reason="}, 2, "error: --reason must not be empty"},
		{[]string{"override", "di/storefront", "none", "--for", "2h"}, 2, "error: --for, --until and --reason go with active or passive: none removes the pin, its end and its reason"},
		{[]string{"approve", "storefront"}, 2, `error: "storefront": name the switch as KIND/NAME, e.g. di/storefront`},
		{[]string{"approve", "di/storefront", "active"}, 2, "error: expected KIND/NAME, got 2 arguments"},
		{[]string{"status", "x", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "error: stat /nonexistent/kubeconfig: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			if code != tt.wantCode || errOut.String() != tt.wantErr+"\n" {
				t.Errorf("exit %d, stderr %q; want exit %d, %q", code, errOut.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, genericiooptions.IOStreams{Out: &out, ErrOut: &out}); code != 0 ||
		!strings.HasPrefix(out.String(), "kubectl-dynamic version dev, commit ") {
		t.Errorf("exit %d, %q", code, out.String())
	}
}
