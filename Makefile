# runc-userns — `make help` lists the targets.
SHELL       := /bin/bash
GO          ?= go
PREFIX      ?= /usr/local
VERSION     := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
BIN         := bin/runc-userns
# The same program with the fault switches of internal/fault (build tag
# faults), for the bats fault tests only: make install never installs it.
BIN_FAULTS  := bin/runc-userns-faults
# urfave_cli_no_docs: leave out urfave/cli's man-page generator (blackfriday),
# whose package initialisers run on every call, pass-through included.
# cgo for libuserns's user namespace holder (a CLONE_VM child, which Go
# cannot start) and the signal handler that forwards to runc
# (internal/runc), linked statically so that the binary runs on any node
# (contrib/kubernetes copies it there); osusergo and netgo keep the C
# library's NSS out should net or os/user ever be imported; today neither is.
BUILDTAGS   := urfave_cli_no_docs,osusergo,netgo
# The C library linked in: musl (Debian's musl-tools), made for static
# linking; glibc warns against static binaries (NSS, dlopen).
# BUILD_CC=gcc builds against glibc.
BUILD_CC    ?= musl-gcc
# Current upstream runc for the second test pass (native idmap support).
RUNC_UPSTREAM_VERSION ?= v1.5.2
CACHE       := $(CURDIR)/.cache
RUNC_UPSTREAM := $(CACHE)/runc-$(RUNC_UPSTREAM_VERSION)/runc
# Fuzz budgets are counts, not durations: with a -fuzztime duration, go1.26's
# coordinator can fail a target with "context deadline exceeded" at the
# deadline, no input at fault (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME    ?= 50000x
# crictl for the containerd suite (built from the Go module cache, hack/install-crictl.sh).
CRICTL_VERSION ?= v1.26.1
# containerd 1.7 and 2 for more passes of the containerd suite (Debian 12
# ships 1.6; built from the Go module cache, hack/install-containerd.sh).
CONTAINERD17_VERSION ?= v1.7.35
CONTAINERD17 := $(CACHE)/containerd-$(CONTAINERD17_VERSION)
CONTAINERD2_VERSION ?= v2.2.9
CONTAINERD2 := $(CACHE)/containerd-$(CONTAINERD2_VERSION)
# Kubernetes and etcd for the cluster suite (tests/k8s), built from the Go
# module cache (hack/install-kubernetes.sh, hack/install-etcd.sh).
K8S_VERSION ?= v1.34.4
ETCD_VERSION ?= v3.6.4

# critest, the CRI conformance suite, for tests/critest (built from the Go
# module cache, hack/install-critest.sh); it runs under containerd 1.7.
CRITEST_VERSION ?= v1.34.0
CRITEST := $(CACHE)/critest-$(CRITEST_VERSION)/critest

.PHONY: all build build-faults lint-bats install demo test unit integration integration-runc11 integration-upstream integration-containerd test-k8s test-critest chaos chaos-short fuzz bench deps deps-upstream deps-crictl deps-containerd deps-k8s deps-critest lint clean help

all: build ## Build bin/runc-userns (default)

build: ## Build bin/runc-userns
	@command -v $(BUILD_CC) >/dev/null || { echo "build: $(BUILD_CC) not found: make deps installs it (Debian's musl-tools), or make BUILD_CC=gcc links glibc" >&2; exit 1; }
	CC=$(BUILD_CC) CGO_ENABLED=1 $(GO) build -tags $(BUILDTAGS) -trimpath -ldflags '$(LDFLAGS) -extldflags "-static"' -o $(BIN) .

build-faults: ## Build bin/runc-userns-faults: bin/runc-userns plus the fault switches (RUNC_USERNS_TEST_KILL_AT/_STOP_AT), for the fault tests; never installed
	@command -v $(BUILD_CC) >/dev/null || { echo "build-faults: $(BUILD_CC) not found: make deps installs it (Debian's musl-tools), or make BUILD_CC=gcc links glibc" >&2; exit 1; }
	CC=$(BUILD_CC) CGO_ENABLED=1 $(GO) build -tags $(BUILDTAGS),faults -trimpath -ldflags '$(LDFLAGS) -extldflags "-static"' -o $(BIN_FAULTS) .

install: build ## Install the binary in $(PREFIX)/bin
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/runc-userns

deps: ## Install the Debian packages the build, demo and tests need (gcc, musl-tools, libc6-dev, runc 1.1.5, bats, busybox-static, uidmap, jq, containerd, CNI plugins, iptables, iproute2, podman, crun)
	./hack/install-deps.sh

deps-upstream: ## Build current upstream runc into .cache for the second test pass
	./hack/install-runc-upstream.sh $(RUNC_UPSTREAM_VERSION) $(dir $(RUNC_UPSTREAM))

deps-crictl: ## Build crictl into .cache for the containerd suite
	GO=$(GO) ./hack/install-crictl.sh $(CRICTL_VERSION) $(CACHE)/crictl-$(CRICTL_VERSION)

deps-containerd: ## Build containerd 1.7 and 2 into .cache for more passes of the containerd suite
	GO=$(GO) ./hack/install-containerd.sh $(CONTAINERD17_VERSION) $(CONTAINERD17)
	GO=$(GO) ./hack/install-containerd.sh $(CONTAINERD2_VERSION) $(CONTAINERD2)

deps-k8s: ## Build Kubernetes (apiserver, controller-manager, scheduler, kubelet, kubectl, pause) and etcd into .cache for the cluster suite
	GO=$(GO) BUILD_CC=$(BUILD_CC) ./hack/install-kubernetes.sh $(K8S_VERSION) $(CACHE)/kubernetes-$(K8S_VERSION)
	GO=$(GO) ./hack/install-etcd.sh $(ETCD_VERSION) $(CACHE)/etcd-$(ETCD_VERSION)

deps-critest: ## Build critest into .cache for tests/critest
	GO=$(GO) ./hack/install-critest.sh $(CRITEST_VERSION) $(dir $(CRITEST))

demo: deps build ## Run a busybox container in a pool user namespace and show what it sees
	./hack/demo.sh $(BIN)

test: deps deps-upstream deps-crictl deps-containerd deps-k8s deps-critest build build-faults ## Everything: vet, unit tests with -race, short fuzzing, bats with runc 1.1.5 and upstream runc, the containerd suite again under containerd 1.7 and 2, the Kubernetes cluster suite, critest; fails if they left the host changed
	./hack/hostcheck.sh save $(CACHE)/hostcheck.before
	$(MAKE) unit fuzz integration test-k8s test-critest
	./hack/hostcheck.sh check $(CACHE)/hostcheck.before

unit: lint-bats ## go vet, unit tests with the race detector (glibc), and the packages with C in them again against musl; the bats lint
	$(GO) vet ./...
	$(GO) vet -tags faults ./internal/fault/
	@# Not tee /dev/stderr: when stderr is a file, tee reopens it with O_TRUNC
	@# and wipes the log of everything before (deps, builds) in CI.
	@out=$$(gofmt -l .); test -z "$$out" || { echo "$$out"; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags faults ./internal/fault/
	@# The race detector needs glibc: the packages with C in them run
	@# again against the C library the binary has.
	CC=$(BUILD_CC) $(GO) test -count=1 -tags $(BUILDTAGS) $$($(GO) list -tags $(BUILDTAGS) -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./...)

lint-bats: ## The bats suites' lint (hack/lint-bats.sh: holes in set -e, run without a status check, bare wait, unlocal loop variables), and its own tests
	bats tests/lint
	./hack/lint-bats.sh tests/integration/*.bats tests/integration/*.bash tests/k8s/*.bats tests/k8s/*.bash tests/lint/*.bats bench/*.bats tests/critest/*.bats

bench: deps deps-upstream deps-crictl deps-containerd deps-k8s build ## Benchmarks against plain runc: bench/results/<time>.md and .jsonl (BENCH_N rounds, default 40; the kubelet's pod start BENCH_K8S_N, default 20)
	$(K8S_ENV) BUILD_CC=$(BUILD_CC) BENCH_CONTAINERD2=$(CONTAINERD2) ./hack/bench.sh

fuzz: ## Run every fuzz target for $(FUZZTIME) (executions, or a duration such as 30s)
	./hack/fuzz.sh $(FUZZTIME)

integration: integration-runc11 integration-upstream integration-containerd ## bats end-to-end suites against both runcs, and the containerd suite under containerd 1.7 and 2

integration-runc11: build build-faults deps-crictl ## bats suites against Debian's runc 1.1.5
	REAL_RUNC=/usr/sbin/runc bats --print-output-on-failure tests/integration

integration-upstream: build build-faults deps-crictl ## bats suites against upstream runc ($(RUNC_UPSTREAM_VERSION))
	REAL_RUNC=$(RUNC_UPSTREAM) bats --print-output-on-failure tests/integration

integration-containerd: build deps-upstream deps-crictl deps-containerd ## the containerd suite under containerd $(CONTAINERD17_VERSION) (runc 1.1.5) and $(CONTAINERD2_VERSION) (runc 1.1.5, upstream runc)
	PATH=$(CONTAINERD17):$$PATH CONTAINERD_VERSION=$(CONTAINERD17_VERSION) REAL_RUNC=/usr/sbin/runc \
		bats --print-output-on-failure tests/integration/containerd.bats
	PATH=$(CONTAINERD2):$$PATH CONTAINERD_VERSION=$(CONTAINERD2_VERSION) REAL_RUNC=/usr/sbin/runc \
		bats --print-output-on-failure tests/integration/containerd.bats
	PATH=$(CONTAINERD2):$$PATH CONTAINERD_VERSION=$(CONTAINERD2_VERSION) REAL_RUNC=$(RUNC_UPSTREAM) \
		bats --print-output-on-failure tests/integration/containerd.bats

K8S_ENV := K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) CONTAINERD17_VERSION=$(CONTAINERD17_VERSION) \
	CONTAINERD2_VERSION=$(CONTAINERD2_VERSION) RUNC_UPSTREAM_VERSION=$(RUNC_UPSTREAM_VERSION)
K8S_NATIVE_FILES := tests/k8s/00-install.bats tests/k8s/10-pods.bats tests/k8s/20-volumes.bats tests/k8s/30-restarts.bats

test-k8s: build deps-upstream deps-crictl deps-containerd deps-k8s ## The Kubernetes cluster suite alone (tests/k8s), TAP: every story on containerd $(CONTAINERD17_VERSION) and runc 1.1.5 with runc-userns installed by contrib/kubernetes; then stories 1-5 on containerd $(CONTAINERD2_VERSION) and runc $(RUNC_UPSTREAM_VERSION), as hostUsers: false pods and through runc-userns
	@echo "# tests/k8s: containerd $(CONTAINERD17_VERSION), runc 1.1.5, pods through runc-userns"
	$(K8S_ENV) bats --tap --print-output-on-failure tests/k8s
	@echo "# tests/k8s: containerd $(CONTAINERD2_VERSION), runc $(RUNC_UPSTREAM_VERSION), pods with hostUsers: false (KEP-127)"
	$(K8S_ENV) K8S_E2E_NODE=native K8S_E2E_PODS=hostusers bats --tap --print-output-on-failure $(K8S_NATIVE_FILES)
	@echo "# tests/k8s: containerd $(CONTAINERD2_VERSION), runc $(RUNC_UPSTREAM_VERSION), pods through runc-userns"
	$(K8S_ENV) K8S_E2E_NODE=native K8S_E2E_PODS=pooled bats --tap --print-output-on-failure $(K8S_NATIVE_FILES)

test-critest: build deps-crictl deps-containerd deps-critest ## critest under containerd $(CONTAINERD17_VERSION) and runc 1.1.5: plain runc, then runc-userns under mode annotation (the same passes) and always (README's by-design failures only)
	PATH=$(CONTAINERD17):$$PATH CONTAINERD_VERSION=$(CONTAINERD17_VERSION) REAL_RUNC=/usr/sbin/runc CRITEST=$(CRITEST) GO=$(GO) \
		bats --print-output-on-failure tests/critest

# The chaos run (tests/chaos/chaos.sh): pods at density under containerd
# 1.7 and runc 1.1.5 while wrapper calls are SIGKILLed at random,
# containerd restarts and the stateDir fills up. SEED=N replays a run.
SEED ?=
CHAOS_ENV := PATH=$(CONTAINERD17):$$PATH CONTAINERD_VERSION=$(CONTAINERD17_VERSION) REAL_RUNC=/usr/sbin/runc SEED=$(SEED)

chaos: build deps-crictl deps-containerd ## The chaos run: 100 pods in waves of 16 under random kills of the wrapper, 2 containerd restarts and a full stateDir; nothing may leak or overlap (SEED=N replays a run)
	$(CHAOS_ENV) ./tests/chaos/chaos.sh

chaos-short: build deps-crictl deps-containerd ## The chaos run's short form: 20 pods in waves of 10, 1 containerd restart (SEED=N replays a run)
	$(CHAOS_ENV) CHAOS_PODS=20 CHAOS_WAVE=10 CHAOS_RESTARTS=1 ./tests/chaos/chaos.sh

clean: ## Remove build outputs
	rm -rf bin

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
