# dynamic-ingress-operator
#
# Everything the build and the tests need is built or installed here, pinned,
# into bin/ (never committed). A fresh machine needs only Go and the Go
# module proxy.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GOOS ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)

## Pinned versions.
K8S_VERSION ?= 1.36.3
ETCD_VERSION ?= 3.6.16
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.1
# The data plane of the demo and the end-to-end tests (hack/traefik).
TRAEFIK_VERSION ?= v3.6.12

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
# The control plane for envtest, the demo and the e2e tests: kube-apiserver,
# etcd, kube-controller-manager and kubectl, built from the Go module proxy
# (hack/controlplane, hack/etcd). The layout matches setup-envtest's.
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s/$(K8S_VERSION)-$(GOOS)-$(GOARCH)
export KUBEBUILDER_ASSETS ?= $(ENVTEST_ASSETS)
# Traefik, the proxy that serves the Ingresses and HTTPRoutes in the demo and
# the end-to-end tests, on loopback (docs/behaviour.md, Served). The tests
# find it through TRAEFIK.
TRAEFIK ?= $(LOCALBIN)/traefik-$(TRAEFIK_VERSION)
export TRAEFIK

GO_TEST_FLAGS ?= -count=1

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-20s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs and the RBAC role.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

GENERATED = api/v1beta1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml config/webhook/manifests.yaml

.PHONY: verify-generated
verify-generated: ## Fail when the generated files differ from what manifests and generate make.
	@digest() { { find $(GENERATED) -type f 2>/dev/null || true; } | sort | xargs cat | sha256sum; }; \
	before=$$(digest); \
	$(MAKE) --no-print-directory manifests generate >/dev/null; \
	after=$$(digest); \
	if [ "$$before" != "$$after" ]; then \
	  echo "Generated files were stale; they are regenerated now: review and commit them."; \
	  exit 1; \
	fi

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet, the operator's module and the release module's.
	go vet ./...
	cd $(RELEASE_MODULE) && go vet ./...

.PHONY: lint
lint: golangci-lint ## golangci-lint (.golangci.yml), with kube-api-linter on api/; the release module too.
	$(GOLANGCI_LINT_KAL) run ./...
	cd $(RELEASE_MODULE) && $(GOLANGCI_LINT_KAL) run ./...

# The pure packages: no control plane, run with the race detector in seconds.
UNIT_PKGS = ./internal/match/... ./internal/decision/... ./internal/plugin/... ./internal/probe/... ./internal/schedule/... ./internal/target/... ./internal/metrics/... ./internal/fairshare/... ./internal/notify/... ./internal/flip/... ./internal/served/... ./internal/evaluate/... ./internal/writes/... ./internal/secrets/... ./internal/workers/... ./internal/controller/notifiers/... ./cmd/...
# The envtest suites: a real kube-apiserver and etcd per package (test/chart
# and test/config also run the helm CLI, $(HELM), and kubectl kustomize).
INTEGRATION_PKGS = ./internal/controller/... ./internal/webhook/... ./test/config/... ./test/chart/... ./test/plugin/... ./internal/controlplane/...
# Black-box: the built manager, real kubectl.
E2E_PKGS = ./test/e2e/... ./test/uninstall/...
# The release module (hack/release): the release tool's unit tests, and
# test/image (the image make image builds, run against the control plane).
# `go test ./...` at the root does not reach a nested module.
RELEASE_MODULE = hack/release
RELEASE_UNIT_PKGS = ./internal/... .
RELEASE_E2E_PKGS = ./test/image/...
# The image suite cross-compiles the manager for linux/amd64 and arm64
# before its first test: with a fresh machine's empty build cache, on 2
# cores shared with the suites beside it, that can pass go test's default
# 10 minutes.
RELEASE_TEST_TIMEOUT = 20m
# What only builds or releases is kept out of the operator's go.mod
# (CONTRIBUTING.md). kustomize is not in this list: the plugin links it,
# through k8s.io/cli-runtime.
RELEASE_ONLY_MODULES = helm\.sh/|github\.com/spdx/|github\.com/google/go-containerregistry

.PHONY: test
test: verify-generated vet lint test-binaries ## Run every test: generated files, vet, gofmt, the demo once, every package (unit, envtest, e2e), the cache guard under -race, and the small bench run.
	@test -z "$$(gofmt -l api cmd internal test hack/release 2>/dev/null)" || { echo "gofmt needed:"; gofmt -l api cmd internal test hack/release; exit 1; }
	@if go list -deps ./cmd/... | grep -qE '^(testing|github.com/onsi/gomega)$$'; then echo "a binary under cmd/ links testing or gomega: keep test helpers in test/"; exit 1; fi
	@if go list -m all | grep -E '^($(RELEASE_ONLY_MODULES))'; then echo "the operator's go.mod requires release tooling (above): keep it in $(RELEASE_MODULE)/go.mod"; exit 1; fi
	@# The two longest packages first: go test starts packages in the order
	@# given, two at a time on 2 cores, and the end-to-end suite (about 7
	@# min) started last would run alone at the end.
	go test $(GO_TEST_FLAGS) ./test/e2e/ ./internal/controller/ ./...
	@# The demo once (output in bin/demo-once.log: it mostly waits on its
	@# story, and shares fixed ports with the e2e suite, so it runs after
	@# it) and the release module's tests (bin/release-test.log) beside the
	@# cache guard under the race detector (make test-race), then beside
	@# every measure of make bench at N=50 (bin/bench-small.log; structure,
	@# not speed: no figure is a pass mark, and it uses no fixed port).
	@$(LOCALBIN)/demo --once --manager $(LOCALBIN)/manager --plugin $(LOCALBIN)/kubectl-dynamic > $(LOCALBIN)/demo-once.log 2>&1 & demo=$$!; \
	(cd $(RELEASE_MODULE) && go test $(GO_TEST_FLAGS) -timeout $(RELEASE_TEST_TIMEOUT) ./...) > $(LOCALBIN)/release-test.log 2>&1 & release=$$!; \
	echo "$(LOCALBIN)/demo --once --manager $(LOCALBIN)/manager --plugin $(LOCALBIN)/kubectl-dynamic  (beside the next)"; \
	echo "cd $(RELEASE_MODULE) && go test $(GO_TEST_FLAGS) -timeout $(RELEASE_TEST_TIMEOUT) ./...  (beside the next)"; \
	echo "go test $(GO_TEST_FLAGS) -race -run '^TestReconcilersLeaveTheCacheAlone$$' ./internal/controller/"; \
	failed=0; \
	go test $(GO_TEST_FLAGS) -race -run '^TestReconcilersLeaveTheCacheAlone$$' ./internal/controller/ || failed=1; \
	echo "BENCH=small BENCH_MANAGER=$(LOCALBIN)/manager BENCH_COMMAND='make test' go test $(GO_TEST_FLAGS) -timeout 10m -run '^TestBenchSmall$$' ./test/bench/  (output in bin/bench-small.log)"; \
	if BENCH=small BENCH_MANAGER=$(LOCALBIN)/manager BENCH_COMMAND='make test' \
	  go test $(GO_TEST_FLAGS) -timeout 10m -run '^TestBenchSmall$$' ./test/bench/ > $(LOCALBIN)/bench-small.log 2>&1; \
	then echo "make bench-small: every measure ran (table in bin/bench-small.log)"; else cat $(LOCALBIN)/bench-small.log; failed=1; fi; \
	if wait $$release; then cat $(LOCALBIN)/release-test.log; else cat $(LOCALBIN)/release-test.log; failed=1; fi; \
	if wait $$demo; then echo "make demo DEMO_ARGS=--once: every step happened (output in bin/demo-once.log)"; else cat $(LOCALBIN)/demo-once.log; failed=1; fi; \
	exit $$failed

# The binaries make test runs, built two at a time: on a fresh clone each
# is mostly a link from the Go build cache, and one link uses about one core.
.PHONY: test-binaries
test-binaries:
	$(MAKE) --no-print-directory -j2 envtest-assets traefik helm build

.PHONY: test-unit
test-unit: ## The pure packages, with the race detector (seconds).
	go test $(GO_TEST_FLAGS) -race $(UNIT_PKGS)
	cd $(RELEASE_MODULE) && go test $(GO_TEST_FLAGS) -race $(RELEASE_UNIT_PKGS)

.PHONY: test-race
test-race: envtest-assets ## The cache guard under the race detector: no reconciler writes to an object it read from the cache without a copy, even the value it had.
	go test $(GO_TEST_FLAGS) -race -run '^TestReconcilersLeaveTheCacheAlone$$' ./internal/controller/

.PHONY: test-integration
test-integration: envtest-assets traefik helm ## The envtest suites: controllers, webhooks, the install bundle, the Helm chart.
	go test $(GO_TEST_FLAGS) $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: envtest-assets traefik helm ## Black-box tests: the built manager, webhooks over TLS, real kubectl.
	go test $(GO_TEST_FLAGS) $(E2E_PKGS)
	cd $(RELEASE_MODULE) && go test $(GO_TEST_FLAGS) -timeout $(RELEASE_TEST_TIMEOUT) $(RELEASE_E2E_PKGS)

.PHONY: demo
demo: envtest-assets traefik build ## Run the operator on a local control plane and show it at work (DEMO_ARGS=--once to run the story once).
	$(LOCALBIN)/demo --manager $(LOCALBIN)/manager --plugin $(LOCALBIN)/kubectl-dynamic $(DEMO_ARGS)

# BENCH_MANAGER=path measures a manager binary built elsewhere (another
# revision) instead of building ./cmd; the report names it.
.PHONY: bench
bench: envtest-assets ## Measure the flip (against the plain and the owned floor), steady state, webhooks, probes, memory, scale (10 000 switches, a restart), a cluster state's flip (2000 switches in 20 namespaces), an anyOf flip (2000 switches of two entries), served flips through Traefik (50 and 500), notifications (2000 switches, three notifiers), kubectl dynamic and fair shares between namespaces, a service state and pins that end together, beside their baselines (about two hours on 2 shared cores); rewrites the generated section of docs/benchmarks.md.
	BENCH=full BENCH_COMMAND='make bench$(if $(BENCH_MANAGER), BENCH_MANAGER=$(BENCH_MANAGER))' \
	  go test -count=1 -v -timeout 150m -run '^TestBenchFull$$' ./test/bench/

.PHONY: bench-small
bench-small: envtest-assets ## Every measure of make bench at small sizes (N=50) in about four minutes; prints the table, leaves the docs alone.
	BENCH=small BENCH_COMMAND='make bench-small' \
	  go test -count=1 -v -timeout 10m -run '^TestBenchSmall$$' ./test/bench/

##@ Build

.PHONY: build
build: ## Build the manager into bin/manager, the kubectl plugin into bin/kubectl-dynamic (and the demo into bin/demo).
	go build -o $(LOCALBIN)/manager ./cmd
	go build -o $(LOCALBIN)/kubectl-dynamic ./cmd/kubectl-dynamic
	go build -o $(LOCALBIN)/demo ./cmd/demo

.PHONY: run
run: ## Run the manager against the current kubeconfig (webhooks off).
	go run ./cmd --enable-webhooks=false

##@ Deployment

IMG ?= dynamic-ingress-operator:latest

.PHONY: docker-build
docker-build: ## Build the manager image with a Docker engine (make image, without one, is the source of truth: docs/install.md).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: build-installer
build-installer: manifests generate $(KUSTOMIZE) ## Write dist/install.yaml: CRDs, RBAC, manager, webhooks, cert-manager Issuer and Certificate.
	@mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default > dist/install.yaml
	@echo "Wrote dist/install.yaml for image $(IMG)"

.PHONY: deploy
deploy: build-installer $(ENVTEST_ASSETS)/kubectl ## Install the bundle into the cluster of the current kubeconfig (needs cert-manager).
	$(KUBECTL) apply --server-side -f dist/install.yaml

# The documents of a YAML stream that are not CustomResourceDefinitions: the
# awk program of docs/install.md's Uninstall (test/uninstall runs that one
# and checks that this is the same).
WITHOUT_CRDS = awk '/^---$$/ { if (!crd) printf "%s", doc; doc = ""; crd = 0 } /^kind: CustomResourceDefinition$$/ { crd = 1 } { doc = doc $$0 "\n" } END { if (!crd) printf "%s", doc }'

.PHONY: undeploy
undeploy: $(ENVTEST_ASSETS)/kubectl ## Remove the bundle but its CRDs: DynamicIngresses, DynamicHTTPRoutes and their Ingresses and HTTPRoutes stay (docs/install.md, Uninstall).
	$(WITHOUT_CRDS) dist/install.yaml | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: install
install: $(KUSTOMIZE) $(ENVTEST_ASSETS)/kubectl ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

# Deleting a CRD deletes its objects, and the garbage collector then deletes
# the Ingresses and HTTPRoutes they own: release those first (docs/install.md,
# Uninstall). A manager still running could put an ownerReference back.
.PHONY: orphan-targets
orphan-targets: $(ENVTEST_ASSETS)/kubectl ## Delete every DynamicIngress and DynamicHTTPRoute with --cascade=orphan: their Ingresses and HTTPRoutes stay, unowned. Refuses while a manager pod runs.
	@pods=$$($(KUBECTL) get pods --all-namespaces -l control-plane=controller-manager,app.kubernetes.io/name=dynamic-ingress-operator -o name); \
	if [ -n "$$pods" ]; then echo "The manager still runs ($$pods): make undeploy, or helm uninstall, first (docs/install.md, Uninstall)."; exit 1; fi
	@for kind in dynamicingresses dynamichttproutes; do \
	  crd=$$($(KUBECTL) get crd $$kind.ingress.dynamicingress.io --ignore-not-found -o name); \
	  if [ -n "$$crd" ]; then \
	    echo "$(KUBECTL) delete $$kind.ingress.dynamicingress.io --all --all-namespaces --cascade=orphan --timeout=5m"; \
	    $(KUBECTL) delete $$kind.ingress.dynamicingress.io --all --all-namespaces --cascade=orphan --timeout=5m; \
	  fi; \
	done

.PHONY: uninstall
uninstall: orphan-targets ## Remove the CRDs, after make orphan-targets: every Ingress and HTTPRoute stays (docs/install.md, Uninstall).
	$(KUBECTL) delete --ignore-not-found crd dynamicingresses.ingress.dynamicingress.io dynamichttproutes.ingress.dynamicingress.io dynamicingressstates.ingress.dynamicingress.io clusterdynamicingressstates.ingress.dynamicingress.io dynamicingressnotifiers.ingress.dynamicingress.io

# The Helm chart (charts/dynamic-ingress-operator). The helm CLI is built from
# the Go module proxy into bin/; test/chart renders, lints and packages the
# chart with it (the tests find it through HELM), and the release tool's
# Helm SDK is at the same version (tests check both).
HELM_VERSION ?= v4.2.4
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
export HELM
CHART_DIR ?= charts/dynamic-ingress-operator

.PHONY: helm
helm: $(HELM) ## Build the helm CLI the chart's tests and make helm-package run.

.PHONY: helm-package
helm-package: $(HELM) ## Lint the Helm chart and package it into dist/ (CHART_VERSION= and APP_VERSION= override Chart.yaml's).
	@mkdir -p dist
	$(HELM) lint --strict $(CHART_DIR)
	$(HELM) package $(CHART_DIR) --destination dist $(if $(CHART_VERSION),--version $(CHART_VERSION)) $(if $(APP_VERSION),--app-version $(APP_VERSION))

$(HELM):
	GOBIN=$(LOCALBIN)/.gobin go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/.gobin/helm $@

##@ Release

# One source of version truth (docs/install.md): VERSION is stamped into
# every binary (--version), the image's labels and the chart's version and
# appVersion. COMMIT and SOURCE_DATE_EPOCH (every timestamp in the image,
# the chart and the SBOM: the commit's time) default to HEAD's, so that two
# builds of one commit write the same bytes.
VERSION ?= dev
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# The image's repository, as install.yaml names it: set it to where you
# push (make publish), e.g. IMAGE_REPO=registry.example.com/team/dynamic-ingress-operator.
IMAGE_REPO ?= dynamic-ingress-operator
IMAGE_SOURCE ?= https://github.com/dynamicingress/dynamic-ingress-operator
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
DIST ?= $(CURDIR)/dist
IMAGE_ARCHIVE = $(DIST)/dynamic-ingress-operator-$(VERSION).oci.tar
# Every binary the release ships, as the SBOM describes them: the manager of
# each image platform (bin/image, the bytes in the image's layer) and the
# plugin of each plugin platform (dist/).
comma := ,
MANAGER_BINARIES = $(foreach p,$(subst $(comma), ,$(IMAGE_PLATFORMS)),$(LOCALBIN)/image/manager-$(subst /,-,$(p)))
PLUGIN_BINARIES = $(foreach p,$(PLUGIN_PLATFORMS),$(DIST)/kubectl-dynamic-$(VERSION)-$(subst /,-,$(p)))
# hack/release, a Go module of its own: builds the binaries, the image
# (go-containerregistry), the chart package (Helm SDK), install.yaml
# (kustomize API), the SBOM (spdx tools-golang) and the checksums. It runs
# from the root: the binaries it builds are the operator module's.
RELEASE_TOOL = $(LOCALBIN)/release
STAMP = -version $(VERSION) -commit $(COMMIT) -created $(SOURCE_DATE_EPOCH) -source $(IMAGE_SOURCE)

.PHONY: release-tool
release-tool:
	cd $(RELEASE_MODULE) && go build -o $(RELEASE_TOOL) .

.PHONY: image
image: release-tool ## Build the manager image (linux/amd64 and linux/arm64, one OCI index) without a container engine into dist/dynamic-ingress-operator-$(VERSION).oci.tar.
	$(RELEASE_TOOL) image $(STAMP) -platforms $(IMAGE_PLATFORMS) -binaries $(LOCALBIN)/image -out $(IMAGE_ARCHIVE)

.PHONY: test-image
test-image: envtest-assets helm ## Build the image as make image does and run its binary as the image's user against a local control plane.
	cd $(RELEASE_MODULE) && go test $(GO_TEST_FLAGS) -timeout $(RELEASE_TEST_TIMEOUT) $(RELEASE_E2E_PKGS)

.PHONY: release
release: ## make release VERSION=x.y.z: write dist/ anew: image, chart, install.yaml, kubectl-dynamic (binaries, krew archives and manifest), SBOM, SHA256SUMS (about 20 s with a warm Go cache; docs/install.md).
	@[[ "$(VERSION)" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "make release needs VERSION=x.y.z (got '$(VERSION)')"; exit 1; }
	@grep -q '^## \[$(VERSION)\]' CHANGELOG.md || { echo "CHANGELOG.md has no section '## [$(VERSION)]': write it first"; exit 1; }
	rm -rf $(DIST)
	$(MAKE) --no-print-directory image
	@# The chart and install.yaml name the image IMAGE_REPO:VERSION@<the digest of the index just built>.
	$(RELEASE_TOOL) chart -version $(VERSION) -created $(SOURCE_DATE_EPOCH) -chart $(CHART_DIR) -repository $(IMAGE_REPO) -image $(IMAGE_ARCHIVE) -out $(DIST)
	$(RELEASE_TOOL) install -repository $(IMAGE_REPO) -tag $(VERSION) -config config -image $(IMAGE_ARCHIVE) -out $(DIST)/install.yaml
	@for p in $(PLUGIN_PLATFORMS); do \
	  echo "kubectl-dynamic for $$p"; \
	  $(RELEASE_TOOL) binary $(STAMP) -package ./cmd/kubectl-dynamic -platform $$p -out $(DIST)/kubectl-dynamic-$(VERSION)-$${p/\//-} && \
	  $(RELEASE_TOOL) plugin-archive -created $(SOURCE_DATE_EPOCH) -binary $(DIST)/kubectl-dynamic-$(VERSION)-$${p/\//-} -license LICENSE -out $(DIST)/kubectl-dynamic-$(VERSION)-$${p/\//-}.tar.gz || exit 1; \
	done
	$(RELEASE_TOOL) krew -version $(VERSION) -template plugins/dynamic.yaml -dir $(DIST) -out $(DIST)/dynamic.yaml
	$(RELEASE_TOOL) sbom $(STAMP) -out $(DIST)/sbom.spdx.json $(MANAGER_BINARIES) $(PLUGIN_BINARIES)
	$(MAKE) --no-print-directory validate-sbom
	$(RELEASE_TOOL) checksums -dir $(DIST)
	@if command -v sha256sum >/dev/null; then cd $(DIST) && sha256sum -c --quiet SHA256SUMS && echo "SHA256SUMS: every file checks"; fi
	@ls -l $(DIST)

.PHONY: validate-sbom
validate-sbom: release-tool ## Validate dist/sbom.spdx.json (SPDX 2.3, with spdx tools-golang) and check that it describes every binary the release ships, with its SHA-256 (the managers read from the image archive).
	$(RELEASE_TOOL) validate-sbom -image $(IMAGE_ARCHIVE) $(DIST)/sbom.spdx.json $(PLUGIN_BINARIES)

# Pushing is never part of the build: `make publish` pushes what make
# release wrote, with crane (go-containerregistry, the version the release
# module requires) and helm.
CRANE ?= $(LOCALBIN)/crane-$(shell cd $(RELEASE_MODULE) && go list -m -f '{{.Version}}' github.com/google/go-containerregistry 2>/dev/null)
CHART_REPO ?=

.PHONY: publish
publish: $(HELM) ## Push dist/'s image to IMAGE_REPO:VERSION and its chart to CHART_REPO (oci://...); never run by make release.
	@test "$(IMAGE_REPO)" != dynamic-ingress-operator -a -n "$(CHART_REPO)" || { echo "make publish VERSION=x.y.z IMAGE_REPO=registry.example.com/team/dynamic-ingress-operator CHART_REPO=oci://registry.example.com/team/charts"; exit 1; }
	@test -f $(CRANE) || { GOBIN=$(LOCALBIN)/.gobin go install github.com/google/go-containerregistry/cmd/crane@$(patsubst $(LOCALBIN)/crane-%,%,$(CRANE)) && mv $(LOCALBIN)/.gobin/crane $(CRANE); }
	layout=$$(mktemp -d); trap 'rm -rf "$$layout"' EXIT; tar -xf $(IMAGE_ARCHIVE) -C "$$layout"; $(CRANE) push "$$layout" $(IMAGE_REPO):$(VERSION)
	$(HELM) push $(DIST)/dynamic-ingress-operator-$(VERSION).tgz $(CHART_REPO)

##@ Tools

KUBECTL ?= $(ENVTEST_ASSETS)/kubectl

.PHONY: envtest-assets
envtest-assets: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/kubectl $(ENVTEST_ASSETS)/kube-controller-manager ## Build the control-plane binaries.

CONTROLPLANE_DEPS = hack/controlplane/go.mod hack/controlplane/go.sum
$(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/kubectl $(ENVTEST_ASSETS)/kube-controller-manager: $(CONTROLPLANE_DEPS)
	@mkdir -p $(ENVTEST_ASSETS)
	cd hack/controlplane && go build -o $@.tmp k8s.io/kubernetes/cmd/$(notdir $@) && mv $@.tmp $@

$(ENVTEST_ASSETS)/etcd: hack/etcd/go.mod hack/etcd/go.sum
	@mkdir -p $(ENVTEST_ASSETS)
	cd hack/etcd && go build -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

# Traefik from the Go module proxy, as the control plane is built: its go.mod
# has replace directives, so `go install` refuses it, and hack/traefik, a
# module of its own, requires it and repeats its replace and exclude lines.
# Nothing is stubbed at this version. (v3.7.x would need stubs: its nested
# module github.com/traefik/traefik/dynamic/ext is not in its module zip, and
# the SDKs of 13 of lego v5's DNS providers are not served by the proxy.)
# Its first build here took 6 min 27 s on 2 cores (the modules already
# downloaded), a rebuild with a warm Go build cache 9 s (the link alone).
.PHONY: traefik
traefik: $(TRAEFIK) ## Build Traefik, the data plane of the demo and the end-to-end tests.

$(TRAEFIK): hack/traefik/go.mod hack/traefik/go.sum
	@v=$$(cd hack/traefik && go list -m -f '{{.Version}}' github.com/traefik/traefik/v3); \
	  test "$$v" = "$(TRAEFIK_VERSION)" || { echo "hack/traefik/go.mod requires Traefik $$v, not $(TRAEFIK_VERSION)"; exit 1; }
	@grep -q 'TraefikVersion = "$(TRAEFIK_VERSION)"' internal/controlplane/traefik.go || { echo "internal/controlplane/traefik.go's TraefikVersion is not $(TRAEFIK_VERSION)"; exit 1; }
	@mkdir -p $(LOCALBIN)
	cd hack/traefik && go build -trimpath -ldflags '-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$(TRAEFIK_VERSION:v%=%)' -o $@.tmp github.com/traefik/traefik/v3/cmd/traefik && mv $@.tmp $@

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN)/.gobin go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/.gobin/controller-gen $@

$(KUSTOMIZE):
	GOBIN=$(LOCALBIN)/.gobin go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/.gobin/kustomize $@

# golangci-lint v2. `make lint` runs a build of it with the kube-api-linter
# module plugin compiled in (hack/golangci-lint: what `golangci-lint custom`
# makes, but from the Go module proxy alone), pinned to the same version.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOLANGCI_LINT_KAL ?= $(LOCALBIN)/golangci-lint-kal-$(GOLANGCI_LINT_VERSION)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT_KAL) ## Build golangci-lint with the kube-api-linter plugin.

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN)/.gobin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/.gobin/golangci-lint $@

$(GOLANGCI_LINT_KAL): hack/golangci-lint/go.mod hack/golangci-lint/go.sum hack/golangci-lint/main.go
	@v=$$(cd hack/golangci-lint && go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2); \
	  test "$$v" = "$(GOLANGCI_LINT_VERSION)" || { echo "hack/golangci-lint/go.mod requires golangci-lint $$v, not $(GOLANGCI_LINT_VERSION)"; exit 1; }
	cd hack/golangci-lint && go build -o $@.tmp . && mv $@.tmp $@
