# Builds the policy module, runs it, tests it. Every target installs what it needs itself.

WASM_TARGET := wasm32-wasip1
CRATE       := multinode_networking_policy
MODULE      := target/$(WASM_TARGET)/release/$(CRATE).wasm
SOURCES     := $(wildcard src/*.rs) Cargo.toml Cargo.lock
CARGO       ?= cargo
CLOUD       ?= aws
POD         ?=
SETTINGS    ?=
KWCTL       ?= kwctl

.PHONY: all
all: policy.wasm

.PHONY: wasm-target
wasm-target:
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

policy.wasm: $(SOURCES) | wasm-target
	$(CARGO) build --locked --release --target $(WASM_TARGET) -p multinode-networking-policy
	cp $(MODULE) policy.wasm

# The main job: the policy, through the same wasmtime host as the tests, on an example pod.
.PHONY: preview
preview: policy.wasm
	$(CARGO) run --locked -q -p e2e-tests --bin preview -- --cloud $(CLOUD) \
		$(if $(POD),--pod $(POD)) $(if $(SETTINGS),--settings $(SETTINGS))

.PHONY: test
test: fmt-check lint unit-tests e2e-tests

.PHONY: unit-tests
unit-tests:
	$(CARGO) test --locked -p multinode-networking-policy

.PHONY: e2e-tests
e2e-tests: policy.wasm
	POLICY_WASM=$(CURDIR)/policy.wasm $(CARGO) test --locked -p e2e-tests

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

# Embeds policy-metadata.yml and the README into the module, as `kwctl push` expects.
annotated-policy.wasm: policy.wasm policy-metadata.yml README.md
	$(KWCTL) annotate -m policy-metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

.PHONY: clean
clean:
	$(CARGO) clean
	rm -f policy.wasm annotated-policy.wasm
