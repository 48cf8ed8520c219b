# myriarch — build, test, demo. See README.md.
GO        ?= go
BIN       ?= bin
LDFLAGS   ?= -s -w
VERSION   ?= 0.1.0-dev
GOFLAGS_BUILD = -trimpath -ldflags "$(LDFLAGS) -X github.com/myriarch/myriarch/internal/buildinfo.Version=$(VERSION)"

CMDS = myriarchd myriarch-updater myriarch-sigstore telecraft blueprint-check

.PHONY: all build test setup vet tidy unit crossbuild demo bench clean

all: build

build:
	@mkdir -p $(BIN)
	@for c in $(CMDS); do \
	  CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/$$c ./cmd/$$c || exit 1; \
	done

# Installs the tools the tests need when they are missing (Debian packages; as root,
# otherwise it prints the apt-get command) and checks they are all there.
setup:
	@bash test/setup.sh

vet:
	$(GO) vet ./...

# go.mod and go.sum list exactly what the code imports.
tidy:
	$(GO) mod tidy -diff
	cd packaging/nfpm/build && $(GO) mod tidy -diff

# Docker tests run against DOCKER_HOST when it answers, else against a private engine
# that test/docker/up.sh starts. A test whose tool or engine is missing fails.
#
# go test runs TEST_PACKAGES packages at once: most of the slow ones wait on processes,
# containers and timers more than they use a core. The slowest are named first so that
# they start first instead of running alone at the end (`go test -json` gives each
# package's time; see BENCHMARKS.md, make test).
#
# Every package runs with the race detector but test/e2e and test/attack: they run the
# product as separate processes, built as shipped, and their own code is the harness
# (sinks, hostile clients, fixtures), so instrumenting it checks only the harness and
# costs a CPU-minute. They run beside the others, started first, as the slowest.
# Test binaries are linked without DWARF (-ldflags=-w; stack traces keep their lines):
# a quarter less link time for each of the ~85 a changed tree relinks.
TEST_PACKAGES ?= 3
RACE_FREE = ./test/e2e ./test/attack
SLOW_TESTS = ./test/container ./test/windows ./server ./agent/install/binary ./server/console ./installer ./server/wsconn \
  ./server/store/sqlite ./server/configs ./agent/install/selfupdate ./server/store/postgres ./test/peers/peerrun \
  ./server/audit ./server/cluster ./internal/blueprint ./agent/providers
unit:
	DOCKER_HOST=$$(bash test/setup.sh docker) && export DOCKER_HOST && \
	  { $(GO) test -count=1 -p 2 -timeout 20m -ldflags=-w $(TEST_FLAGS) $(RACE_FREE) & plain=$$!; \
	    $(GO) test -race -count=1 -p $(TEST_PACKAGES) -timeout 20m -ldflags=-w $(TEST_FLAGS) $(SLOW_TESTS) \
	      $$($(GO) list ./... | grep -v -x -e '.*/test/e2e' -e '.*/test/attack'); race=$$?; \
	    wait $$plain; plainrc=$$?; [ $$race -eq 0 ] && [ $$plainrc -eq 0 ]; }
	cd packaging/nfpm/build && $(GO) vet ./... && $(GO) test -count=1 ./...

# What ships for Windows and macOS must keep compiling, though the tests run on Linux:
# the updater (every package under agent/) and the offline tools on Windows, the offline
# tools on macOS. myriarchd is a Linux server (packages, image); compiling the whole tree
# twice more would double a cold make test's build for nothing shipped.
CROSS_WINDOWS = ./agent/... ./cmd/myriarch-updater ./cmd/myriarch-sigstore ./cmd/telecraft ./cmd/blueprint-check
CROSS_MACOS   = ./cmd/telecraft ./cmd/blueprint-check
crossbuild:
	GOOS=windows GOARCH=amd64 $(GO) build $(CROSS_WINDOWS)
	GOOS=darwin GOARCH=arm64 $(GO) build $(CROSS_MACOS)

# peers first: a cold build of the upstream supervisor and collectors takes minutes
# and must not eat into the go test timeout.
test: setup vet tidy crossbuild peers unit

# Screenshots of the browser console (docs/console/*.png, shown in the README), taken by its
# headless Chromium tests against a real myriarchd with real agents.
.PHONY: console-screenshots
console-screenshots:
	MYRIARCH_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run 'TestConsoleInBrowser|TestConfigInBrowser' ./server/console/

# The demo builds what it runs (peers on first use, then cached).
demo:
	$(GO) run ./test/demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN) .myriarch

# Build (or find in $HOME/.cache/myriarch/peers) the upstream OpAMP Supervisor and the test collectors,
# for this system and for Windows (the Wine tier runs those).
.PHONY: peers
peers:
	$(GO) run ./test/peers
	$(GO) run ./test/peers -goos windows

# deb and rpm packages of myriarch-updater and myriarchd (packaging/nfpm, built with nfpm).
.PHONY: packages
packages: build
	cd packaging/nfpm/build && $(GO) run . -bin $(abspath $(BIN)) -packaging $(abspath packaging) \
	  -version $(VERSION) -out $(abspath $(BIN)/packages)

# Start a private Docker engine for the container-mode tests (installs docker.io when needed);
# prints the DOCKER_HOST to export, e.g. `export DOCKER_HOST=$$(make -s docker-up)`.
.PHONY: docker-up
docker-up:
	@bash test/setup.sh docker

# Load test of myriarchd: simulated hosts (a collector + an updater each) on loopback
# through ramp, steady state, reconnect storm, rollout and churn; prints the measurements.
# Default 10 000 agents; e.g. `make load LOAD="-n 20000 -steady 5m"`. Results: BENCHMARKS.md.
.PHONY: load
load:
	$(GO) run ./test/load $(LOAD)
