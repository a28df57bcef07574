# SPDX-License-Identifier: Apache-2.0
#
# ignis: one non-recursive Makefile.
#
#   make deps      install the Debian packages the build and the tests need (root)
#   make           build build/ignis
#   make run       set up, build, profile this host for 30 s, print the hottest functions and
#                  write the HTML report of the run
#   make test      set up, build, run every test (unit, sanitizers, integration, format)
#   make test-kernels  only the kernel matrix: Debian 12's 6.1 kernels under QEMU (part of test)
#   make kernels-readme  copy the last kernel matrix into README.md ("Verified on")
#   make bench     benchmarks (QUICK=1 for a short run, SOAK_MINUTES=N for the memory soak)
#   make soak      shipping through outages at full length (30 min; SOAK_MINUTES=N)
#   make install   PREFIX=/usr/local DESTDIR= (binary, man page, systemd unit, default config)
#   make deb       the Debian package, into build/deb/
#   make vmlinux   regenerate vmlinux/$(ARCH)/vmlinux.h from VMLINUX_BTF

# ---- 1. Tools ---------------------------------------------------------------------------------
CC ?= gcc
CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c
PKG_CONFIG ?= pkg-config
CLANG_FORMAT ?= clang-format
GO ?= go
PYTHON ?= python3

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || \
		    echo /lib/systemd/system)
BUILD ?= build
WERROR ?= 1
V ?= 0

# ---- 2. Architecture --------------------------------------------------------------------------
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

VERSION ?= 0.1.0
REVISION := $(shell git rev-parse --short HEAD 2>/dev/null)

# ---- 3. Flags ---------------------------------------------------------------------------------
PKGS := libbpf libelf libdw libdeflate zlib libprotobuf-c yaml-0.1 libmicrohttpd libcurl json-c libsystemd \
	libdebuginfod
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARNINGS := -Wall -Wextra -Wshadow -Wformat=2 -Wno-format-nonliteral -Wstrict-prototypes \
	    -Wmissing-prototypes -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(WARNINGS) -MMD -MP \
	      -fstack-protector-strong -Iagent -I$(BUILD) -I$(BUILD)/agent $(PKG_CFLAGS) \
	      -DIGNIS_VERSION='"$(VERSION)$(if $(REVISION), (git $(REVISION)))"' \
	      -DIGNIS_VERSION_SHORT='"$(VERSION)"' $(CPPFLAGS) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lelf -lz -liberty -llzma -lm

SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# The clang BPF target has no system headers of its own: borrow the host's include paths
# (libbpf-bootstrap's CLANG_BPF_SYS_INCLUDES).
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 | \
	sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
	      -Wall -Werror $(CLANG_BPF_SYS_INCLUDES)

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# ---- 4. Sources -------------------------------------------------------------------------------
SYMBOLIZER_SRCS := $(wildcard symbolizer/*.c)
# agent/ is in folders by stage (docs/architecture.md): main.c and the window cycle on top.
AGENT_LIB_SRCS := $(filter-out agent/main.c,$(wildcard agent/*.c agent/*/*.c))
AGENT_SRCS := $(AGENT_LIB_SRCS) agent/main.c
# One BPF object from every bpf/*.bpf.c, maps.bpf.c (the maps' definitions) first.
BPF_SRCS := bpf/maps.bpf.c $(filter-out bpf/maps.bpf.c,$(sort $(wildcard bpf/*.bpf.c)))

SYMBOLIZER_OBJS := $(SYMBOLIZER_SRCS:%.c=$(BUILD)/%.o)
PROTOS := profile push parca otlp_profiles
PROTO_HDRS := $(PROTOS:%=$(BUILD)/agent/%.pb-c.h)
AGENT_LIB_OBJS := $(AGENT_LIB_SRCS:%.c=$(BUILD)/%.o) $(PROTOS:%=$(BUILD)/agent/%.pb-c.o) \
		  $(BUILD)/agent/report/assets.o
AGENT_OBJS := $(AGENT_LIB_OBJS) $(BUILD)/agent/main.o
SKEL := $(BUILD)/profiler.skel.h

UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_TESTS:%=$(BUILD)/tests/unit/%)
UNIT_SAN_BINS := $(UNIT_TESTS:%=$(BUILD)/san/tests/unit/%)

FIXTURE_SRCS := $(wildcard tests/data/src/*.c)
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)

# The HTML page of ignis report (agent/report/html.h): our page, style and script, and the
# libraries npm installs there (make deps; versions pinned by its package-lock.json).
REPORT_WEB := agent/report/web
REPORT_NPM := $(REPORT_WEB)/node_modules
REPORT_ASSETS := $(REPORT_WEB)/report.html $(REPORT_WEB)/report.css $(REPORT_WEB)/report.js \
		 $(REPORT_NPM)/d3/dist/d3.min.js $(REPORT_NPM)/d3/LICENSE \
		 $(REPORT_NPM)/d3-flame-graph/dist/d3-flamegraph.umd.min.js \
		 $(REPORT_NPM)/d3-flame-graph/dist/d3-flamegraph.css \
		 $(REPORT_NPM)/d3-flame-graph/LICENSE \
		 $(addprefix $(REPORT_NPM)/,$(addsuffix /LICENSE,d3-ease d3-geo d3-delaunay delaunator \
		 robust-predicates))

# ---- 5. Rules ---------------------------------------------------------------------------------
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BUILD)/ignis

$(BUILD)/ignis: $(AGENT_OBJS) $(BUILD)/libsymbolizer.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS_ALL)

$(BUILD)/libsymbolizer.a: $(SYMBOLIZER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/%.o: %.c | $(PROTO_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# protoc-c writes both files at once (a pattern rule with two targets is one recipe).
$(BUILD)/agent/%.pb-c.c $(BUILD)/agent/%.pb-c.h: agent/proto/%.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(BUILD)/agent
	$(Q)$(PROTOC_C) --c_out=$(BUILD)/agent -Iagent/proto $<

$(BUILD)/agent/%.pb-c.o: $(BUILD)/agent/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(filter-out -Wmissing-prototypes -Wshadow,$(ALL_CFLAGS)) -c $< -o $@

# The page's pieces, embedded by the assembler's .incbin (assets.S), which finds them along
# -Wa,-I; its dependency output does not name them, so they are listed here.
$(BUILD)/agent/report/assets.o $(BUILD)/san/agent/report/assets.o: agent/report/assets.S \
								   $(REPORT_ASSETS)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -Wa,-I$(REPORT_WEB) -Wa,-I$(REPORT_NPM) -o $@ $<

# A library file missing: node_modules was never installed.
$(REPORT_NPM)/%:
	@echo "$@ is missing: run make deps (npm ci --prefix $(REPORT_WEB))" >&2; exit 1

# The skeleton is included by the sampler only.
$(BUILD)/agent/collect/sampler.o $(BUILD)/san/agent/collect/sampler.o: $(SKEL)

# Each program file is compiled on its own; bpftool's static linker joins them into one object
# (resolving the extern maps and globals of bpf/maps.bpf.h to their one definition), in
# BPF_SRCS order, for one skeleton.
$(BUILD)/bpf/%.tmp.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(BPF_EXTRA_CFLAGS) -c $< -o $@

$(BUILD)/bpf/profiler.bpf.o: $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.tmp.o)
	$(call msg,BPF-LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^
	$(Q)$(LLVM_STRIP) -g $@

$(SKEL): $(BUILD)/bpf/profiler.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name profiler_bpf > $@

# Sanitizer builds of the same sources, for the unit tests.
$(BUILD)/san/%.o: %.c | $(PROTO_HDRS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(BUILD)/san/agent/%.pb-c.o: $(BUILD)/agent/%.pb-c.c
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -Wmissing-prototypes -Wshadow,$(ALL_CFLAGS)) $(SAN_FLAGS) \
		-c $< -o $@

$(BUILD)/san/libsymbolizer.a: $(SYMBOLIZER_SRCS:%.c=$(BUILD)/san/%.o)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/san/ignis: $(AGENT_OBJS:$(BUILD)/%=$(BUILD)/san/%) $(BUILD)/san/libsymbolizer.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS_ALL)

include tests/tests.mk

# ---- 6. Phony targets -------------------------------------------------------------------------
DEB_BUILD_PKGS := make gcc clang llvm bpftool libbpf-dev libelf-dev libdw-dev libdeflate-dev zlib1g-dev \
		  libyaml-dev libmicrohttpd-dev libjson-c-dev libcurl4-openssl-dev \
		  protobuf-c-compiler libprotobuf-c-dev libsystemd-dev libiberty-dev liblzma-dev libdebuginfod-dev pkg-config git
DEB_TEST_PKGS := libcmocka-dev golang-go python3 bpftrace linux-perf xz-utils perl gdb openssl \
		 prometheus \
		 clang-format binutils procps util-linux file \
		 debhelper dpkg-dev lintian systemd libcap2-bin nodejs strace man-db g++ rustc \
		 debuginfod elfutils lld python3-flask chromium \
		 python3-grpcio python3-grpc-tools python3-protobuf \
		 qemu-system-x86 busybox-static cpio
DEB_PKGS := $(DEB_BUILD_PKGS) $(DEB_TEST_PKGS)

# Installs only what is missing; runs apt-get update only then. npm comes with nodejs from
# some sources and as its own package from Debian: asked for only when the command is missing.
deps: deps-apt tests/k8s/node_modules/.package-lock.json $(REPORT_NPM)/.package-lock.json \
      tests/browser/node_modules/.package-lock.json \
      tests/pyroscope-nodejs/node_modules/.package-lock.json

deps-apt:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' \
		|| echo $$p; done); \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -z "$$missing" ]; then echo "  DEPS     all installed"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "make deps: missing packages:" $$missing "- run as root (sudo make deps)" >&2; \
		exit 1; fi; \
	echo "  DEPS     installing:" $$missing; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null

# The Kubernetes schemas the manifests are validated against (npm package kubernetes-models),
# pinned by the lock file.
tests/k8s/node_modules/.package-lock.json: tests/k8s/package-lock.json | deps-apt
	$(call msg,NPM,tests/k8s)
	$(Q)npm ci --prefix tests/k8s --no-audit --no-fund --loglevel=error >/dev/null

# The libraries the HTML page embeds (d3, d3-flame-graph), pinned by the lock file.
$(REPORT_NPM)/.package-lock.json: $(REPORT_WEB)/package-lock.json | deps-apt
	$(call msg,NPM,$(REPORT_WEB))
	$(Q)npm ci --prefix $(REPORT_WEB) --no-audit --no-fund --loglevel=error >/dev/null

# The page's browser test drives Debian's chromium with playwright-core (no browser download).
tests/browser/node_modules/.package-lock.json: tests/browser/package-lock.json | deps-apt
	$(call msg,NPM,tests/browser)
	$(Q)npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >/dev/null

# Grafana's Pyroscope Node.js SDK, which the test receiver must take as the server does
# (tests/integration/test_pyroscope_sdk.py); its native part (@datadog/pprof) ships prebuilt
# for linux-x64/arm64 glibc and musl, so nothing is compiled. It needs Node.js >= 20.20.2.
tests/pyroscope-nodejs/node_modules/.package-lock.json: tests/pyroscope-nodejs/package-lock.json \
							| deps-apt
	$(call msg,NPM,tests/pyroscope-nodejs)
	$(Q)npm ci --prefix tests/pyroscope-nodejs --no-audit --no-fund --loglevel=error >/dev/null

RUN_ARGS ?= --duration 30 --interval 10 --top 15
RUN_DIR ?= ignis-profiles

# Set up, build (in a fresh make, so pkg-config sees the packages just installed), run, and
# end with the HTML report of this run's windows (the folder may hold earlier runs').
run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)start=$$(date +%s); \
	$(BUILD)/ignis --output-dir $(RUN_DIR) $(RUN_ARGS) && \
	$(BUILD)/ignis report --format html --output $(BUILD)/report.html --since @$$start \
		$(RUN_DIR) && \
	echo "report of this run: $(abspath $(BUILD))/report.html (flame graph, top table," \
		"timeline; open it in a browser)"

test: deps
	$(Q)$(MAKE) --no-print-directory test-all

# QUICK=1 for a developer's short run (one repetition, lighter sizes; README's Performance
# section says what it costs); BENCH_ONLY=overhead,bpf,agent,storm,window,upload,symbols,unwind,
# python,offcpu,report,memsoak for some sections; SOAK_MINUTES=N adds the memsoak section
# (the agent's memory under process churn, N minutes; alone: BENCH_ONLY=memsoak, 60 min).
bench: deps
	$(Q)$(MAKE) --no-print-directory bench-run

# Shipping at full length: outages of minutes, a hung server, a restart with a spool (30 min;
# SOAK_MINUTES=N for another length). Ends with "N passed, N failed" like make test.
soak: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)$(PYTHON) tests/integration/soak.py --build $(BUILD) $(if $(SOAK_MINUTES),--minutes $(SOAK_MINUTES))

vmlinux:
	$(call msg,BTF,$(VMLINUX_BTF))
	$(Q)ver=$$(uname -r | cut -d. -f1-2); \
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > vmlinux/$(ARCH)/vmlinux_$$ver.h && \
	ln -sf vmlinux_$$ver.h vmlinux/$(ARCH)/vmlinux.h

# The man page's OPTIONS section comes from the option table, like the README's reference.
# SOURCE_DATE_EPOCH (set by dpkg) keeps the date reproducible.
man: $(BUILD)/ignis.8

$(BUILD)/ignis.8: packaging/man/ignis.8.in packaging/man/options.awk $(BUILD)/ignis
	$(call msg,MAN,$@)
	$(Q)$(BUILD)/ignis --print-reference | awk -f packaging/man/options.awk > $@.options
	$(Q)sed -e "s/@VERSION@/$(VERSION)/" \
		-e "s/@DATE@/$$(date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%d)/" \
		-e "/@OPTIONS@/{r $@.options" -e "d}" $< > $@
	$(Q)rm -f $@.options

# A configuration already in place is kept; the unit names the installed binary.
install: $(BUILD)/ignis $(BUILD)/ignis.8
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/ignis $(DESTDIR)$(SYSCONFDIR)/default
	install -m 0755 $(BUILD)/ignis $(DESTDIR)$(PREFIX)/sbin/ignis
	install -m 0644 $(BUILD)/ignis.8 $(DESTDIR)$(PREFIX)/share/man/man8/ignis.8
	sed 's|/usr/sbin/ignis|$(PREFIX)/sbin/ignis|' packaging/systemd/ignis.service > \
		$(DESTDIR)$(SYSTEMDUNITDIR)/ignis.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/ignis.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/ignis/config.yaml ] || install -m 0644 \
		packaging/systemd/config.yaml $(DESTDIR)$(SYSCONFDIR)/ignis/config.yaml
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/ignis ] || install -m 0600 \
		packaging/systemd/ignis.default $(DESTDIR)$(SYSCONFDIR)/default/ignis

# The Debian package, built from a copy of the working tree with packaging/debian as its
# debian/ folder (so the tree keeps one packaging folder); the .deb lands in $(BUILD)/deb.
# The page's npm libraries are not tracked: the files it embeds are copied from make deps'
# install (packaging/debian/copyright lists them).
# The package builds in its own tree: none of this make's variables (BUILD=...) may leak in.
DEB_SRC := $(BUILD)/deb/ignis-$(VERSION)
deb: deps
	$(call msg,DEB,$(DEB_SRC))
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(DEB_SRC)
	$(Q)git ls-files -co --exclude-standard -z | grep -zv '^debian/' | \
		xargs -0 cp --parents -t $(DEB_SRC)
	$(Q)cp --parents -t $(DEB_SRC) $(filter $(REPORT_NPM)/%,$(REPORT_ASSETS))
	$(Q)cp -r packaging/debian $(DEB_SRC)/debian
	$(Q)cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -us -uc -b > ../build.log 2>&1 || \
		{ tail -40 ../build.log >&2; exit 1; }
	$(Q)ls $(BUILD)/deb/*.deb

clean:
	rm -rf $(BUILD)

format:
	$(CLANG_FORMAT) -i $(FORMAT_SRCS)

PHONY_DEPS := deps-apt
.PHONY: all deps $(PHONY_DEPS) run test test-all vmlinux install clean format bench soak man deb

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
