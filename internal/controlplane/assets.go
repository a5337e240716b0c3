// Package controlplane finds and runs the project's own Kubernetes control
// plane (kube-apiserver, etcd, kube-controller-manager, kubectl), built by
// the Makefile into bin/k8s.
package controlplane

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// KubernetesVersion is the version of the control plane the Makefile builds.
const KubernetesVersion = "1.36.3"

// RepoRoot is the root of this repository's working tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is the directory of the control-plane binaries: $KUBEBUILDER_ASSETS
// when set, else where the Makefile builds them.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s", KubernetesVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
}

// CRDDir is the directory of the generated CustomResourceDefinitions.
func CRDDir() string {
	return filepath.Join(RepoRoot(), "config", "crd", "bases")
}

// GatewayAPICRDDir is the directory of the Gateway API's standard-channel
// CRDs, in the Go module cache, at the version go.mod requires: the same
// API the operator is built against, with no download from elsewhere.
func GatewayAPICRDDir() string {
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/gateway-api")
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	var mod struct{ Dir string }
	if err != nil || json.Unmarshal(out, &mod) != nil || mod.Dir == "" {
		// envtest then fails with ErrorIfCRDPathMissing, naming this path.
		return filepath.Join(RepoRoot(), "gateway-api-crds-not-found")
	}
	return filepath.Join(mod.Dir, "config", "crd", "standard")
}
