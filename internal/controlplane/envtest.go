package controlplane

import (
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Environment is the envtest control plane of this project: the control
// plane binaries the Makefile builds, the CRDs of config/crd/bases and the
// Gateway API's standard CRDs. With
// webhooks, the webhook configurations of config/webhook are installed too,
// pointed at a local serving address with a generated certificate.
func Environment(webhooks bool) *envtest.Environment {
	env := EnvironmentWithoutGatewayAPI(webhooks)
	env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, GatewayAPICRDDir())
	return env
}

// EnvironmentWithoutGatewayAPI is Environment without the Gateway API CRDs,
// as in a cluster that has not installed them.
func EnvironmentWithoutGatewayAPI(webhooks bool) *envtest.Environment {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{CRDDir()},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: AssetsDir(),
	}
	if webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths:            []string{WebhookManifests()},
			LocalServingHost: "127.0.0.1",
		}
	}
	return env
}

// WebhookManifests is the generated webhook configuration file.
func WebhookManifests() string {
	return filepath.Join(RepoRoot(), "config", "webhook", "manifests.yaml")
}
