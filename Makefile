# The two commands of the README: `make run` and `make test`. Everything else is their parts.
SHELL := /bin/bash
.DEFAULT_GOAL := run

APT_PACKAGES := libwebkit2gtk-4.1-dev libsoup-3.0-dev libayatana-appindicator3-dev librsvg2-dev \
	libxdo-dev libssl-dev pkg-config xvfb webkit2gtk-driver dbus-x11 gnome-keyring \
	libsecret-tools xdotool dbus-bin dunst
TAURI_DRIVER_VERSION := 2.1.0
export WEBKIT_DISABLE_DMABUF_RENDERER := 1
# Test sessions have no accessibility bus; asking for one only adds noise.
export NO_AT_BRIDGE := 1
# cargo-installed tools (tauri-driver); PATH is left as it is when it has them, since a changed
# PATH makes cargo rebuild the crates whose build scripts watch it.
ifeq ($(findstring $(HOME)/.cargo/bin,$(PATH)),)
export PATH := $(HOME)/.cargo/bin:$(PATH)
endif

.PHONY: run test deps system-deps tauri-driver nextest ui ui-test desktop lint rust-test \
	desktop-test bench bench-quick bench-deps bench-build bench-build-quick soak fuzz \
	phases-start phases layering fmt

## Build and start the desktop app on its embedded demo gateway.
run: desktop
	./target/debug/countersign

## Every test: front end, lints, Rust (with a real Secret Service), desktop end-to-end,
## the gateway again on PostgreSQL, the .deb; then each phase's wall time.
test: phases-start deps ui ui-test fmt layering
	@$(SUB) venvs >$(TARGET_DIR)/venvs.log 2>&1 & venvs=$$!; \
	$(SUB) UI_BUILT=1 desktop; built=$$?; \
	wait $$venvs; made=$$?; cat $(TARGET_DIR)/venvs.log; \
	[ $$built = 0 ] && [ $$made = 0 ]
	@$(SUB) PREPARED=1 rust-test
	@echo "The PostgreSQL pass runs beside the desktop lane; its output follows the lane's."
	@$(SUB) PREPARED=1 postgres-test >$(TARGET_DIR)/postgres.log 2>&1 & pg=$$!; \
	$(SUB) PREPARED=1 fuzz-quick desktop-test deb-check container-check; lane=$$?; \
	wait $$pg; pg_status=$$?; cat $(TARGET_DIR)/postgres.log; \
	$(SUB) phases; [ $$lane = 0 ] && [ $$pg_status = 0 ]

# `make test` runs its parts in sub-makes so that two can run side by side where one of them
# leaves the cores mostly idle: the venvs' downloads beside the build, and the PostgreSQL pass
# beside the desktop lane (the desktop tests run one at a time). UI_BUILT=1 tells a sub-make that
# the UI is built, PREPARED=1 that the build is done too, so neither is built (and timed) again.
SUB = $(MAKE) --no-print-directory

# `make test` lints as it builds: clippy's driver compiles the workspace's own crates (what
# `cargo clippy` does, with the same arguments), so the dependencies compile once, for the tests,
# instead of a second time for a separate clippy pass. Every cargo command `make test` runs
# inherits this, so none compiles the workspace again without it.
test: export RUSTC_WORKSPACE_WRAPPER := $(shell rustc --print sysroot)/bin/clippy-driver
test: export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__

# Each phase of `make test` runs through $(PHASE) with its name, which records its wall time.
PHASES := $(abspath $(or $(CARGO_TARGET_DIR),target))/phases.tsv
PHASE = tests/phase.sh $(PHASES)

phases-start:
	@mkdir -p $(dir $(PHASES)) && : > $(PHASES) && date +%s > $(PHASES).start

## The wall time of each phase of the last `make test`.
phases:
	@tests/phase.sh $(PHASES) --table

deps: system-deps tauri-driver nextest ui/node_modules/.installed

# Installs only what is missing, so a prepared machine pays nothing.
define apt_install_missing
	@missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages:" $$missing; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

system-deps:
	$(call apt_install_missing,$(APT_PACKAGES))

# Tools are not the workspace's crates: `make test`'s clippy driver stays out of their builds.
# They are built unoptimized: a test tool's speed matters less than the minutes a release build
# of it costs a fresh machine.
INSTALL := $(PHASE) tools env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo install --locked --debug

tauri-driver:
	@command -v tauri-driver >/dev/null || $(INSTALL) tauri-driver --version $(TAURI_DRIVER_VERSION)

# Runs the test binaries side by side, each test in a process of its own (.config/nextest.toml).
NEXTEST_VERSION := 0.9.143
nextest:
	@cargo nextest --version >/dev/null 2>&1 || $(INSTALL) cargo-nextest --version $(NEXTEST_VERSION)

ui/node_modules/.installed: ui/package.json ui/package-lock.json
	$(PHASE) npm npm --prefix ui ci --no-audit --no-fund
	touch $@

# The UI is built again only when one of its sources changed: a build rewrites ui/dist, and the
# desktop crate, which embeds it, would be compiled again for nothing (`make bench` after
# `make bench-build` did so for minutes).
UI_SOURCES := $(shell find ui/src -type f) ui/index.html ui/package.json ui/package-lock.json \
	ui/svelte.config.js ui/tsconfig.json ui/vite.config.ts

ui/dist/index.html: $(UI_SOURCES) ui/node_modules/.installed
	$(PHASE) ui-build npm --prefix ui run build

ui: deps $(if $(PREPARED)$(UI_BUILT),,ui/dist/index.html)

ui-test: deps
	$(PHASE) ui-test npm --prefix ui run check
	$(PHASE) ui-test npm --prefix ui test

fmt:
	$(PHASE) fmt cargo fmt --all -- --check

## fmt and clippy, as `make test` holds the tree to them (it lints while it builds).
lint: fmt ui
	cargo clippy --workspace --all-targets -- -D warnings

## The crates' layering: a pack depends on the pack interface and proto alone, the engine on no
## transport, the desktop on no server part (tests/layering.sh reads `cargo metadata`).
layering:
	$(PHASE) layering tests/layering.sh

# One build of everything the tests run (and, under `make test`, clippy's lints): every later cargo
# command resolves the same features for the whole workspace, so nothing compiles twice.
desktop: ui
	$(if $(PREPARED),,$(PHASE) build cargo build --workspace --all-targets)

# The desktop suites are the test group of that name (.config/nextest.toml): one app at a time.
DESKTOP_SUITES := group(desktop)
# Every Rust suite but the desktop's, on SQLite; the two-instance tests need PostgreSQL and run
# in its pass only.
RUST_SUITES := not ($(DESKTOP_SUITES)) & not (package(countersign-gateway) & test(/^instances::/))

rust-test: desktop
	$(PHASE) rust-suites tests/with-keyring.sh tests/with-display.sh \
		cargo nextest run --workspace -E '$(RUST_SUITES)'

## Each fuzz target for ten seconds, from the debug build `desktop` made, on a seed drawn anew
## each run and printed (FUZZ_SEED=N runs it again): a crash, or too few mutated inputs past
## parsing and the schema, fails it (`make fuzz` runs longer, in release).
.PHONY: fuzz-quick
fuzz-quick: desktop
	$(PHASE) fuzz-quick $(or $(CARGO_TARGET_DIR),target)/debug/countersign-fuzz \
		--seconds 10 $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

## The desktop end-to-end tests: the real binary through tauri-driver, one at a time.
desktop-test: desktop
	$(PHASE) desktop-e2e tests/with-keyring.sh tests/with-display.sh \
		cargo nextest run --workspace --profile desktop -E '$(DESKTOP_SUITES)'

# PostgreSQL, for the gateway's second store; Debian's package brings the `postgres` system user
# that a cluster started as root runs as.
APT_PACKAGES += postgresql
.PHONY: postgres-test

## The gateway's whole suite again, each test on a database of its own in a throw-away
## PostgreSQL cluster, from the binaries the workspace build made; tests/instances/ runs two
## instances on one of them. A property case costs a database and about 0.8 s here (0.05 s on
## SQLite): 32 cases per property (256 on SQLite, 10,000 under `make soak`).
POSTGRES_SUITES := package(countersign-gateway) | package(countersign-engine)
POSTGRES_CASES ?= 32
postgres-test: system-deps desktop
	@echo "PostgreSQL pass: $(POSTGRES_CASES) cases per property test (SQLite: 256), since each case makes a database"
	COUNTERSIGN_PROPERTY_CASES=$(POSTGRES_CASES) $(PHASE) postgres tests/with-keyring.sh tests/with-postgres.sh \
		cargo nextest run --workspace --profile postgres -E '$(POSTGRES_SUITES)'

# --- MCP: the official Python SDK as the test client of tests/mcp.rs ---
MCP_VENV := target/mcp-venv
MCP_SDK_VERSION := 2.3.0
APT_PACKAGES += python3-venv
.PHONY: mcp-venv venvs
rust-test: mcp-venv
venvs: mcp-venv schema-venv

## A throw-away venv with the MCP Python SDK; a new pin makes a new venv.
mcp-venv: system-deps $(MCP_VENV)/.mcp-$(MCP_SDK_VERSION)

$(MCP_VENV)/.mcp-$(MCP_SDK_VERSION):
	rm -rf $(MCP_VENV)
	python3 -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/pip install --quiet --disable-pip-version-check mcp==$(MCP_SDK_VERSION)
	touch $@

# --- MCP: the published servers the gateway's proxy stands in front of in its tests
# (crates/gateway/tests/mcp_proxy.rs): the filesystem server from npm (locked in
# tests/mcp-servers), the git server from pip ---
MCP_SERVERS := target/mcp-servers
GIT_SERVER_VERSION := 2026.10.19
APT_PACKAGES += git
.PHONY: mcp-servers
rust-test: mcp-servers
venvs: mcp-servers

## The published MCP servers, in throw-away folders; a new pin or lock installs them again.
mcp-servers: system-deps $(MCP_SERVERS)/npm/.installed $(MCP_SERVERS)/.git-$(GIT_SERVER_VERSION)

$(MCP_SERVERS)/npm/.installed: tests/mcp-servers/package.json tests/mcp-servers/package-lock.json
	rm -rf $(MCP_SERVERS)/npm && mkdir -p $(MCP_SERVERS)/npm
	cp tests/mcp-servers/package.json tests/mcp-servers/package-lock.json $(MCP_SERVERS)/npm/
	cd $(MCP_SERVERS)/npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(MCP_SERVERS)/.git-$(GIT_SERVER_VERSION):
	rm -rf $(MCP_SERVERS)/venv
	python3 -m venv $(MCP_SERVERS)/venv
	$(MCP_SERVERS)/venv/bin/pip install --quiet --disable-pip-version-check mcp-server-git==$(GIT_SERVER_VERSION)
	touch $@

SCHEMA_VENV := target/schema-venv
SCHEMATHESIS_VERSION := 4.32.5
.PHONY: schema-venv
rust-test: schema-venv

## A throw-away venv with schemathesis, for the schema-driven API tests (tests/schemathesis.rs).
schema-venv: system-deps $(SCHEMA_VENV)/.schemathesis-$(SCHEMATHESIS_VERSION)

$(SCHEMA_VENV)/.schemathesis-$(SCHEMATHESIS_VERSION):
	rm -rf $(SCHEMA_VENV)
	python3 -m venv $(SCHEMA_VENV)
	$(SCHEMA_VENV)/bin/pip install --quiet --disable-pip-version-check schemathesis==$(SCHEMATHESIS_VERSION)
	touch $@

# --- Debian package: the desktop app, countersign-gateway and countersign-cli ---
TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))
TAURI := ui/node_modules/.bin/tauri
# The two command-line binaries ride along in /usr/bin; $(1) is the profile (debug or release).
deb_config = --config src-tauri/tauri.deb.conf.json --config '{"bundle":{"linux":{"deb":{"files":{ \
	"/usr/bin/countersign-gateway":"$(TARGET_DIR)/$(1)/countersign-gateway", \
	"/usr/bin/countersign-cli":"$(TARGET_DIR)/$(1)/countersign-cli"}}}}}'
.PHONY: package deb-check
# deb-check verifies the gateway's unit and probes the service it starts.
APT_PACKAGES += systemd curl

## The release .deb, in target/release/bundle/deb/.
package: deps ui
	cargo build --release -p countersign-gateway -p countersign-cli
	$(TAURI) build --ci --no-sign --bundles deb $(call deb_config,release)

## The debug build `desktop` already made, bundled (nothing recompiles), installed, run, removed.
deb-check: desktop
	rm -rf $(TARGET_DIR)/debug/bundle/deb
	$(PHASE) deb $(TAURI) bundle --ci --no-sign --no-binary-patching --debug --bundles deb \
		$(call deb_config,debug)
	$(PHASE) deb tests/deb-check.sh $(TARGET_DIR)/debug/bundle/deb/*.deb

## The gateway's container image (Containerfile), built and its settings checked where a container
## engine answers; where none does, it says so and builds nothing.
.PHONY: container-check
container-check:
	@engine=$$(for e in podman docker; do $$e info >/dev/null 2>&1 && { echo $$e; break; }; done); \
	if [ -z "$$engine" ]; then \
		echo "container-check: skipped: no container engine answers here (podman, docker)"; \
	else \
		$(PHASE) container $$engine build -f Containerfile -t countersign-gateway:check . && \
		$$engine run --rm countersign-gateway:check config check /etc/countersign/gateway.toml; \
	fi

## The gateway's property tests at 10,000 cases per property (`make test` runs 256).
soak: deps
	COUNTERSIGN_PROPERTY_CASES=10000 cargo test --release -p countersign-gateway \
		--test gateway -- properties:: properties_resources::

## Mutation fuzzing on stable Rust for FUZZ_SECONDS per target (the seven of docs/testing.md);
## crashes land in tests/fuzz/regressions/, which `make test` replays. FUZZ_SEED=N repeats a run.
FUZZ_SECONDS ?= 120
fuzz: deps
	cargo run --release -p countersign-e2e --bin countersign-fuzz -- --seconds $(FUZZ_SECONDS) \
		$(if $(FUZZ_SEED),--seed $(FUZZ_SEED))

## Benchmarks (not part of `make test`): one table of every measured bar, also written to
## target/bench/report.md, the gateway's rows on SQLite and on a throw-away PostgreSQL cluster.
## `bench` measures everything (on 2 cores after the release build, about 10 minutes on SQLite
## and as long again on PostgreSQL); `bench-quick` a subset. BENCH_ARGS="--only latency,polls"
## measures only those parts (criterion, policy, polls, writes, bulk, latency, proxy, desktop), not recorded.
BENCH_TARGET := $(or $(CARGO_TARGET_DIR),target)

bench: bench-build
	tests/with-keyring.sh tests/with-display.sh tests/with-postgres.sh \
		$(BENCH_TARGET)/release/countersign-bench $(BENCH_ARGS)

bench-quick: bench-build-quick
	tests/with-keyring.sh tests/with-postgres.sh $(BENCH_TARGET)/release/countersign-bench --quick \
		$(BENCH_ARGS)

bench-deps: deps mcp-servers
	$(call apt_install_missing,wrk)

# Release builds, timed apart from the run: the gateway, the harness, the desktop app with the
# UI embedded, and the criterion benches.
bench-build: bench-deps ui
	@start=$$(date +%s); \
	cargo build --release -p countersign-gateway -p countersign-e2e -p countersign-desktop --bins \
		--example countersign-hello --features countersign-desktop/reference-window && \
	cargo bench --no-run --bench '*' -p countersign-proto -p countersign-console; \
	status=$$?; echo "Release build: $$(( $$(date +%s) - start )) s"; exit $$status

bench-build-quick: bench-deps
	@start=$$(date +%s); \
	cargo build --release -p countersign-gateway -p countersign-e2e --bins && \
	cargo bench --no-run --bench '*' -p countersign-proto; \
	status=$$?; echo "Release build: $$(( $$(date +%s) - start )) s"; exit $$status
