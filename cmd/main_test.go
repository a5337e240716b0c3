package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeaderElectionNamespace(t *testing.T) {
	dir := t.TempDir()
	inCluster := filepath.Join(dir, "namespace")
	if err := os.WriteFile(inCluster, []byte("dynamic-ingress-operator-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "missing")

	tests := []struct {
		name        string
		flag        string
		leaderElect bool
		file        string
		want        string
		wantErr     string
	}{{
		name: "in a cluster: the pod's namespace",
		flag: "", leaderElect: true, file: inCluster,
		want: "dynamic-ingress-operator-system",
	}, {
		name: "the flag wins over the pod's namespace",
		flag: "ops", leaderElect: true, file: inCluster,
		want: "ops",
	}, {
		name: "outside a cluster with the flag",
		flag: "ops", leaderElect: true, file: outside,
		want: "ops",
	}, {
		name: "outside a cluster without the flag: refused at start, naming the flag",
		flag: "", leaderElect: true, file: outside,
		wantErr: "--leader-election-namespace is required with --leader-elect when the manager runs outside a cluster (" + outside + " does not exist)",
	}, {
		name: "an empty namespace file",
		flag: "", leaderElect: true, file: empty,
		wantErr: "--leader-elect: " + empty + " is empty; set --leader-election-namespace",
	}, {
		name: "no leader election: no namespace needed",
		flag: "", leaderElect: false, file: outside,
		want: "",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := leaderElectionNamespace(tt.flag, tt.leaderElect, tt.file)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("namespace (-want +got):\n%s", diff)
			}
		})
	}
}
