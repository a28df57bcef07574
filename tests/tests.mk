# SPDX-License-Identifier: Apache-2.0
# Test rules, included by the top-level Makefile.

TEST_BUILD := $(BUILD)/tests

# Prerequisites that name a per-program variable ($$(unit_deps_...)) are expanded per target.
.SECONDEXPANSION:

# ---- Workloads: frame pointers kept, no sibling calls, no inlining of the named functions.
WORKLOAD_CFLAGS := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		   -fno-optimize-sibling-calls -fno-inline-functions -pthread -Wall -Wextra
WORKLOAD_DIR := $(TEST_BUILD)/workloads
WORKLOADS := $(WORKLOAD_DIR)/hot2 $(WORKLOAD_DIR)/burn $(WORKLOAD_DIR)/burn-nopie \
	     $(WORKLOAD_DIR)/syscalls $(WORKLOAD_DIR)/uselib $(WORKLOAD_DIR)/libhot.so \
	     $(WORKLOAD_DIR)/hot2-stripped $(WORKLOAD_DIR)/burn-nopie-stripped \
	     $(WORKLOAD_DIR)/inlined $(WORKLOAD_DIR)/templates $(WORKLOAD_DIR)/rustnames-legacy \
	     $(WORKLOAD_DIR)/rustnames-v0 $(WORKLOAD_DIR)/jit $(WORKLOAD_DIR)/gomethods \
	     $(WORKLOAD_DIR)/offcpu $(WORKLOAD_DIR)/llvmload

# Code without frame pointers, for the table unwinder: no sibling calls, so every level of
# the call chain is a real frame (perf --call-graph dwarf is the reference).
NOFP_WORKLOAD_CFLAGS := -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -pthread \
			-Wall -Wextra
WORKLOADS += $(WORKLOAD_DIR)/deep $(WORKLOAD_DIR)/lzmaloop $(WORKLOAD_DIR)/throws \
	     $(WORKLOAD_DIR)/sigprof $(WORKLOAD_DIR)/deep-lld $(WORKLOAD_DIR)/lzmadl \
	     $(WORKLOAD_DIR)/stormburn

# The same linked by lld, which packs segments: the executable one starts mid-page, after
# the read-only one's tail (a mapping's load bias must come from the segment it maps).
$(WORKLOAD_DIR)/deep-lld: tests/workloads/deep.c tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_WORKLOAD_CFLAGS) -fuse-ld=lld -Wl,-z,noseparate-code -fPIE -pie -o $@ $<

$(WORKLOAD_DIR)/deep $(WORKLOAD_DIR)/sigprof $(WORKLOAD_DIR)/stormburn: $(WORKLOAD_DIR)/%: tests/workloads/%.c \
					      tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_WORKLOAD_CFLAGS) -fPIE -pie -o $@ $<

$(WORKLOAD_DIR)/lzmaloop: tests/workloads/lzmaloop.c tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_WORKLOAD_CFLAGS) -fPIE -pie -o $@ $< -llzma

$(WORKLOAD_DIR)/lzmadl: tests/workloads/lzmaloop.c tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(NOFP_WORKLOAD_CFLAGS) -DLZMA_DLOPEN -fPIE -pie -o $@ $<

$(WORKLOAD_DIR)/throws: tests/workloads/throws.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(filter-out -Wextra,$(NOFP_WORKLOAD_CFLAGS)) -fPIE -pie -o $@ $<

$(WORKLOAD_DIR)/%: tests/workloads/%.c tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -fPIE -pie -o $@ $<

# Names for the demangler: C++ templates and namespaces; Rust with its default mangling
# (legacy on stable rustc) and with v0.
RUSTC ?= rustc
CXX_WORKLOAD_FLAGS := $(filter-out -Wextra,$(WORKLOAD_CFLAGS))
RUST_WORKLOAD_FLAGS := -O -g -C force-frame-pointers=yes

$(WORKLOAD_DIR)/templates: tests/workloads/templates.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CXX_WORKLOAD_FLAGS) -fPIE -pie -o $@ $<

$(WORKLOAD_DIR)/rustnames-legacy: tests/workloads/rustnames.rs
	$(call msg,RUSTC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(RUSTC) $(RUST_WORKLOAD_FLAGS) -o $@ $<

$(WORKLOAD_DIR)/rustnames-v0: tests/workloads/rustnames.rs
	$(call msg,RUSTC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(RUSTC) $(RUST_WORKLOAD_FLAGS) -C symbol-mangling-version=v0 -o $@ $<

# Go (Debian's golang-go): method names as Go spells them, main.(*Mixer).Churn.
$(WORKLOAD_DIR)/gomethods: tests/workloads/gomethods/main.go tests/workloads/gomethods/go.mod
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/workloads/gomethods && GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS=-mod=mod \
		$(GO) build -o $(abspath $@) .

# Go with a frameless hot leaf (main.spin, called by main.hot) on several goroutines: as
# built, and as a release build, -ldflags='-s -w' (no .symtab, no DWARF: only .gopclntab).
# And as a cgo program (-tags goleafcgo: linked by gcc, the C runtime's .eh_frame beside
# .gopclntab), -s -w too.
GOLEAF_SRCS := tests/workloads/goleaf/main.go tests/workloads/goleaf/cgo.go \
	       tests/workloads/goleaf/go.mod
WORKLOADS += $(WORKLOAD_DIR)/goleaf $(WORKLOAD_DIR)/goleaf-sw $(WORKLOAD_DIR)/goleaf-cgo-sw

$(WORKLOAD_DIR)/goleaf: $(GOLEAF_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/workloads/goleaf && GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS=-mod=mod \
		$(GO) build -o $(abspath $@) .

$(WORKLOAD_DIR)/goleaf-sw: $(GOLEAF_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/workloads/goleaf && GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS=-mod=mod \
		$(GO) build -ldflags='-s -w' -o $(abspath $@) .

$(WORKLOAD_DIR)/goleaf-cgo-sw: $(GOLEAF_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/workloads/goleaf && GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS=-mod=mod \
		CGO_ENABLED=1 $(GO) build -tags goleafcgo -ldflags='-s -w' -o $(abspath $@) .

$(WORKLOAD_DIR)/burn-nopie: tests/workloads/burn.c tests/workloads/workload.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -fno-pie -no-pie -o $@ $<

$(WORKLOAD_DIR)/libhot.so: tests/workloads/libhot.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -fPIC -shared -o $@ $<

$(WORKLOAD_DIR)/uselib: tests/workloads/uselib.c $(WORKLOAD_DIR)/libhot.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -fPIE -pie -o $@ $< -L$(WORKLOAD_DIR) -lhot \
		-Wl,-rpath,'$$ORIGIN'

# Stripped copies: the agent cannot name their functions, `go tool pprof` can, from the
# unstripped binary with the same build ID (the address-model check).
$(WORKLOAD_DIR)/%-stripped: $(WORKLOAD_DIR)/%
	$(call msg,STRIP,$@)
	$(Q)strip --strip-all -o $@ $<

# ---- ELF fixtures for the symbolizer's unit tests, with `nm` listings as the reference.
FIXTURE_DIR := $(TEST_BUILD)/data
FIXTURE_CFLAGS := -O1 -g -fno-inline -Wall
FIXTURES := $(FIXTURE_DIR)/fixture-pie $(FIXTURE_DIR)/fixture-nopie \
	    $(FIXTURE_DIR)/libfixture.so $(FIXTURE_DIR)/libfixture-stripped.so \
	    $(FIXTURE_DIR)/fixture-nobuildid
FIXTURES += $(FIXTURE_DIR)/inline $(FIXTURE_DIR)/inline-stripped $(FIXTURE_DIR)/inline-other \
	    $(FIXTURE_DIR)/inline-zlib $(FIXTURE_DIR)/fixture-minidebug
FIXTURE_LISTINGS := $(FIXTURES:%=%.nm) $(FIXTURES:%=%.buildid)

# Go's pclntab (tests/unit/test_gopclntab.c): the Go workload goleaf as built and as
# goleaf-sw (-s -w), with the Go toolchain's own readings as the reference: `go tool nm` of
# the unstripped build, and `go tool addr2line` of both at a sample of pcs (each function's
# entry, middle and last byte, and every 4th byte of the main package's functions).
# Also a position-independent -s -w build (its table in .data.rel.ro.gopclntab, which `go tool
# addr2line` does not read: it is held to goleaf-sw's functions and inlined frames).
FIXTURES += $(FIXTURE_DIR)/goleaf $(FIXTURE_DIR)/goleaf-sw $(FIXTURE_DIR)/goleaf-pie-sw \
	    $(FIXTURE_DIR)/goleaf-cgo-sw
FIXTURE_LISTINGS += $(FIXTURE_DIR)/goleaf.gonm $(FIXTURE_DIR)/goleaf.addr2line \
		    $(FIXTURE_DIR)/goleaf-sw.addr2line

$(FIXTURE_DIR)/goleaf-pie-sw: $(GOLEAF_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd tests/workloads/goleaf && GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS=-mod=mod \
		$(GO) build -buildmode=pie -ldflags='-s -w' -o $(abspath $@) .

$(FIXTURE_DIR)/goleaf $(FIXTURE_DIR)/goleaf-sw $(FIXTURE_DIR)/goleaf-cgo-sw: $(FIXTURE_DIR)/%: \
		$(WORKLOAD_DIR)/%
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

$(FIXTURE_DIR)/goleaf.gonm: $(FIXTURE_DIR)/goleaf
	$(call msg,GONM,$@)
	$(Q)$(GO) tool nm -size -sort address $< > $@.tmp && mv $@.tmp $@

$(FIXTURE_DIR)/goleaf.pcs: tests/tools/go_pcs.py $(FIXTURE_DIR)/goleaf.gonm
	$(Q)$(PYTHON) $^ > $@.tmp && mv $@.tmp $@

$(FIXTURE_DIR)/%.addr2line: $(FIXTURE_DIR)/% $(FIXTURE_DIR)/goleaf.pcs
	$(call msg,ADDR2LN,$@)
	$(Q)$(GO) tool addr2line $< < $(FIXTURE_DIR)/goleaf.pcs > $@.tmp && \
		paste -d ' ' $(FIXTURE_DIR)/goleaf.pcs - - < $@.tmp > $@ && rm -f $@.tmp

# Inlined code with DWARF (-O2 -g); a stripped copy whose .gnu_debuglink names inline.debug,
# its debug info only; and the same source built differently (another build ID) whose
# debug file must be refused for inline-stripped.
$(FIXTURE_DIR)/inline: tests/data/src/inline.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fPIE -pie -Wl,--build-id=sha1 -o $@ $<

# MiniDebugInfo as Fedora makes it (GDB manual, "MiniDebugInfo"): stripped, with the function
# symbols .dynsym lacks in an xz-compressed ELF file in .gnu_debugdata.
$(FIXTURE_DIR)/fixture-minidebug: $(FIXTURE_DIR)/fixture-pie
	$(call msg,MINIDBG,$@)
	$(Q)nm -D --format=posix --defined-only $< | awk '{print $$1}' | sort > $@.dynsyms
	$(Q)nm --format=posix --defined-only $< | awk '$$2 ~ /^[Tt]$$/ {print $$1}' | sort > $@.funcs
	$(Q)comm -13 $@.dynsyms $@.funcs > $@.keep
	$(Q)objcopy --only-keep-debug $< $@.full
	$(Q)objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.keep $@.full $@.mini
	$(Q)xz -f $@.mini
	$(Q)strip --strip-all -R .comment -o $@ $<
	$(Q)objcopy --add-section .gnu_debugdata=$@.mini.xz $@
	$(Q)rm -f $@.dynsyms $@.funcs $@.keep $@.full $@.mini.xz

# The same with zlib-compressed debug sections (SHF_COMPRESSED).
$(FIXTURE_DIR)/inline-zlib: tests/data/src/inline.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -gz=zlib -fPIE -pie -Wl,--build-id=sha1 -o $@ $<

$(FIXTURE_DIR)/inline-other: tests/data/src/inline.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fPIE -pie -DOTHER_BUILD -Wl,--build-id=sha1 -o $@ $<

$(FIXTURE_DIR)/inline-stripped: $(FIXTURE_DIR)/inline $(FIXTURE_DIR)/inline-other
	$(call msg,STRIP,$@)
	$(Q)objcopy --only-keep-debug $< $(FIXTURE_DIR)/inline.debug
	$(Q)objcopy --only-keep-debug $(FIXTURE_DIR)/inline-other $(FIXTURE_DIR)/inline-other.debug
	$(Q)strip --strip-all -o $@ $<
	$(Q)cd $(FIXTURE_DIR) && objcopy --add-gnu-debuglink=inline.debug $(@F)

$(FIXTURE_DIR)/fixture-pie: tests/data/src/fixture.c tests/data/src/fixture_asm.S
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie -Wl,--build-id=sha1 -o $@ $^

$(FIXTURE_DIR)/fixture-nopie: tests/data/src/fixture.c tests/data/src/fixture_asm.S
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fno-pie -no-pie -Wl,--build-id=sha1 -o $@ $^

$(FIXTURE_DIR)/fixture-nobuildid: tests/data/src/fixture.c tests/data/src/fixture_asm.S
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie -Wl,--build-id=none -o $@ $^

$(FIXTURE_DIR)/libfixture.so: tests/data/src/fixture.c tests/data/src/fixture_asm.S
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -DFIXTURE_LIB -fPIC -shared -Wl,--build-id=md5 -o $@ $^

$(FIXTURE_DIR)/libfixture-stripped.so: $(FIXTURE_DIR)/libfixture.so
	$(call msg,STRIP,$@)
	$(Q)strip --strip-all -o $@ $<

# Unwind tables (tests/unit/test_unwind.c, against readelf's interpretation of the same CFI):
# .eh_frame with a lazy PLT; the IBT PLT (another PLT expression); .debug_frame only (the crt
# files' .eh_frame removed as well); no CFI at all.
FIXTURES += $(FIXTURE_DIR)/unwind-eh $(FIXTURE_DIR)/unwind-ibt $(FIXTURE_DIR)/unwind-debugframe \
	    $(FIXTURE_DIR)/unwind-nocfi

$(FIXTURE_DIR)/unwind-eh: tests/data/src/unwind.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fPIE -pie -Wl,-z,lazy -o $@ $<

$(FIXTURE_DIR)/unwind-ibt: tests/data/src/unwind.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fPIE -pie -Wl,-z,lazy -Wl,-z,ibtplt -o $@ $<

$(FIXTURE_DIR)/unwind-debugframe: tests/data/src/unwind.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fno-asynchronous-unwind-tables -fno-exceptions -fPIE -pie -o $@.full $<
	$(Q)objcopy -R .eh_frame -R .eh_frame_hdr $@.full $@
	$(Q)rm -f $@.full

$(FIXTURE_DIR)/unwind-nocfi: $(FIXTURE_DIR)/unwind-debugframe
	$(call msg,STRIP,$@)
	$(Q)strip --strip-debug -o $@ $<

# Python line tables (tests/unit/test_linetable.c): every code object of tests/data/src/pylines.py
# as each CPython under test compiles it, with the lines its own decoders give
# (tests/tools/dump_linetables.py); and the interpreters themselves, one "version path" line
# each, for the tests that run a child Python (tests/unit/test_pycode.c). pyenv's builds
# (shared libpython, PIE) and Debian's /usr/bin/python3.11 (static, non-PIE, stripped).
PYENV ?= pyenv
PY_VERSIONS := 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0
PY_SYSTEM := /usr/bin/python3.11
PY_FIXTURES := $(PY_VERSIONS:%=$(FIXTURE_DIR)/pylines-%.txt) $(FIXTURE_DIR)/pylines-system.txt \
	       $(FIXTURE_DIR)/pythons.txt

$(FIXTURE_DIR)/pylines-system.txt: tests/tools/dump_linetables.py tests/data/src/pylines.py
	$(call msg,PYDUMP,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PY_SYSTEM) $^ > $@.tmp && mv $@.tmp $@

$(FIXTURE_DIR)/pylines-%.txt: tests/tools/dump_linetables.py tests/data/src/pylines.py
	$(call msg,PYDUMP,$@)
	$(Q)mkdir -p $(@D)
	$(Q)py=$$($(PYENV) prefix $*)/bin/python3 && $$py $^ > $@.tmp && mv $@.tmp $@

$(FIXTURE_DIR)/pythons.txt:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)for v in $(PY_VERSIONS); do \
		echo "$$v $$($(PYENV) prefix $$v)/bin/python3" || exit 1; done > $@.tmp
	$(Q)echo "system $(PY_SYSTEM)" >> $@.tmp && mv $@.tmp $@

# Addresses and sizes of every defined symbol, and the build ID, from binutils.
$(FIXTURE_DIR)/%.nm: $(FIXTURE_DIR)/%
	$(Q)nm -S --defined-only $< > $@ 2>/dev/null || true
	$(Q)nm -D -S --defined-only $< >> $@ 2>/dev/null || true

$(FIXTURE_DIR)/%.buildid: $(FIXTURE_DIR)/%
	$(Q)readelf -n $< | sed -n 's/.*Build ID: *//p' > $@

# ---- What each program links: derived from its includes (tests/tools/link_deps.py) --------
# A test or tool links the module of every header it includes, and what those modules' own
# sources include, transitively: nothing is listed by hand, and a test of the symbolizer
# links libsymbolizer.a alone. Made again when a source changes; make reads it, then runs.
UNIT_TESTS_WITH_DEPS := $(foreach t,$(UNIT_TESTS),unit_deps_$(t)=tests/unit/$(t).c)
LINKED_TOOLS := tool_deps_pprof_dump=tests/tools/pprof_dump.c \
		tool_deps_html_page=tests/tools/html_page.c \
		tool_deps_mkwindows=tests/tools/mkwindows.c \
		tool_deps_unwind_dump=tests/tools/unwind_dump.c \
		tool_deps_lifecycle=tests/integration/lifecycle.c \
		tool_deps_sym_bench=tests/bench/sym_bench.c \
		tool_deps_window_bench=tests/bench/window_bench.c
LINK_DEPS_MK := $(TEST_BUILD)/link-deps.mk

$(LINK_DEPS_MK): tests/tools/link_deps.py $(wildcard tests/unit/*.[ch] tests/tools/*.c \
		 tests/integration/*.c tests/bench/*.c agent/*.[chS] agent/*/*.[chS] symbolizer/*.h)
	$(Q)mkdir -p $(@D)
	$(Q)$(PYTHON) tests/tools/link_deps.py $(UNIT_TESTS_WITH_DEPS) $(LINKED_TOOLS) > $@.tmp
	$(Q)mv $@.tmp $@

ifeq ($(filter deps deps-apt clean,$(MAKECMDGOALS)),)
-include $(LINK_DEPS_MK)
endif

# ---- Tools ------------------------------------------------------------------------------------
TOOLS := pprof_dump mkwindows unwind_dump lifecycle html_page
TOOL_BINS := $(TOOLS:%=$(TEST_BUILD)/%)

$(TOOL_BINS): $(TEST_BUILD)/%: $$(wildcard tests/tools/%.c tests/integration/%.c) \
	      $$(addprefix $(BUILD)/,$$(tool_deps_$$*))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS_ALL)

# ---- Unit tests: cmocka, each linked against only what it tests. --------------------------
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null || echo -lcmocka)
UNIT_CFLAGS := -Wno-missing-prototypes -Wno-strict-prototypes \
	       -DFIXTURE_DIR='"$(abspath $(FIXTURE_DIR))"' -DFIXTURE_SRC='"$(abspath tests/data/src)"'

$(BUILD)/tests/unit/%: tests/unit/%.c tests/unit/unit.h $(FIXTURES) $(FIXTURE_LISTINGS) \
		       $(PY_FIXTURES)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(UNIT_CFLAGS) -o $@ $< \
		$(addprefix $(BUILD)/,$(unit_deps_$*)) $(CMOCKA_LIBS) $(LDLIBS_ALL)

$(BUILD)/san/tests/unit/%: tests/unit/%.c tests/unit/unit.h $(FIXTURES) $(FIXTURE_LISTINGS) \
			   $(PY_FIXTURES)
	$(call msg,LINK-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(UNIT_CFLAGS) -o $@ $< \
		$(addprefix $(BUILD)/san/,$(unit_deps_$*)) $(CMOCKA_LIBS) $(LDLIBS_ALL)

# The prerequisites above name a pattern variable; expand it per target.
$(UNIT_BINS): $$(addprefix $(BUILD)/,$$(unit_deps_$$(notdir $$@)))
$(UNIT_SAN_BINS): $$(addprefix $(BUILD)/san/,$$(unit_deps_$$(notdir $$@)))

# ---- Format -----------------------------------------------------------------------------------
FORMAT_SRCS := $(wildcard agent/*.[ch] agent/*/*.[ch] symbolizer/*.[ch] bpf/*.[ch])

# ---- Benchmarks (make bench) ------------------------------------------------------------------
BENCH_DIR := $(TEST_BUILD)/bench
BENCH_BINS := $(BENCH_DIR)/spin3 $(BENCH_DIR)/manyprocs $(BENCH_DIR)/window_bench \
	      $(BENCH_DIR)/sym_bench

$(BENCH_DIR)/sym_bench: tests/bench/sym_bench.c $$(addprefix $(BUILD)/,$$(tool_deps_sym_bench))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS_ALL)

$(BENCH_DIR)/spin3 $(BENCH_DIR)/manyprocs: $(BENCH_DIR)/%: tests/bench/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -o $@ $<

$(BENCH_DIR)/window_bench: tests/bench/window_bench.c \
			   $$(addprefix $(BUILD)/,$$(tool_deps_window_bench))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS_ALL)

# The unwind section: one deep recursion built without frame pointers (for the table
# unwinder) and with them (for bpf_get_stack), and UNWIND_MANY_N small programs without
# frame pointers, each its own -DVARIANT (its own code, table and build ID).
UNWIND_BENCH_CFLAGS := -O2 -g -fno-optimize-sibling-calls -fno-inline-functions -pthread \
		       -Wall -Wextra
UNWIND_MANY_N := 200
UNWIND_MANY := $(addprefix $(BENCH_DIR)/unwind_many/unwind_many_,$(shell seq 1 $(UNWIND_MANY_N)))
BENCH_BINS += $(BENCH_DIR)/unwind_deep_nofp $(BENCH_DIR)/unwind_deep_fp $(UNWIND_MANY) \
	      $(TEST_BUILD)/unwind_dump

$(BENCH_DIR)/unwind_deep_nofp: tests/bench/unwind_deep.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNWIND_BENCH_CFLAGS) -fomit-frame-pointer -o $@ $<

$(BENCH_DIR)/unwind_deep_fp: tests/bench/unwind_deep.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNWIND_BENCH_CFLAGS) -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-o $@ $<

# Quiet even without V=1: 200 CC lines would bury the rest of the build's output.
$(BENCH_DIR)/unwind_many/unwind_many_%: tests/bench/unwind_many.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNWIND_BENCH_CFLAGS) -fomit-frame-pointer -DVARIANT=$* -o $@ $<

# The upload section runs test workloads (hot2) as its load.
bench-build: all $(BENCH_BINS) $(TEST_BUILD)/pprof_dump $(TEST_BUILD)/mkwindows $(WORKLOADS)

bench-run: bench-build
	$(Q)$(PYTHON) tests/bench/bench.py $(if $(QUICK),--quick) $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) \
		$(if $(SOAK_MINUTES),--minutes $(SOAK_MINUTES))

# ---- Fuzzing (libFuzzer): the symbolizer's parsers, built with clang and ASan/UBSan ---------
# make fuzz FUZZ_SECONDS=600 runs each target that long, growing tests/fuzz/corpus/TARGET;
# make test replays the committed corpus once through each target.
FUZZ_TARGETS := procmaps perfmap elf debuglink unwind gopclntab
FUZZ_DIR := $(TEST_BUILD)/fuzz
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -g -O1 -Wall -Wextra -Werror \
	       -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
	       $(PKG_CFLAGS)
FUZZ_SYM_OBJS := $(SYMBOLIZER_SRCS:%.c=$(BUILD)/fuzz/%.o)
FUZZ_SECONDS ?= 600

$(BUILD)/fuzz/symbolizer/%.o: symbolizer/%.c
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SYM_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lelf -ldw -ldeflate -lz -liberty -llzma

fuzz-build: $(FUZZ_BINS)

# Seeds from what the tests build: ELF fixtures (and, for debuglink, a binary and its debug
# file behind a two-byte split), this host's maps lines, a JIT map.
fuzz-seeds: $(FIXTURES)
	$(Q)mkdir -p $(FUZZ_DIR)/seeds/procmaps $(FUZZ_DIR)/seeds/perfmap $(FUZZ_DIR)/seeds/elf \
		$(FUZZ_DIR)/seeds/debuglink $(FUZZ_DIR)/seeds/unwind $(FUZZ_DIR)/seeds/gopclntab
	$(Q)$(PYTHON) tests/tools/go_pclntab_seed.py $(FIXTURE_DIR)/goleaf-sw \
		$(FUZZ_DIR)/seeds/gopclntab/goleaf
	$(Q)n=0; while read -r line; do n=$$((n+1)); \
		printf '%s' "$$line" > $(FUZZ_DIR)/seeds/procmaps/$$n; done < /proc/self/maps
	$(Q)printf '7f0000001000 100 LazyCompile:~add /app/x.js:3\n0x7f0000002000 0x20 stub\n' \
		> $(FUZZ_DIR)/seeds/perfmap/1
	$(Q)cp $(FIXTURE_DIR)/fixture-pie $(FIXTURE_DIR)/libfixture-stripped.so \
		$(FIXTURE_DIR)/inline $(FIXTURE_DIR)/inline-stripped $(FIXTURE_DIR)/inline-zlib \
		$(FIXTURE_DIR)/fixture-minidebug $(FUZZ_DIR)/seeds/elf/
	$(Q)for pair in "inline-stripped inline.debug" "inline-stripped inline-other.debug"; do \
		set -- $$pair; size=$$(stat -c %s $(FIXTURE_DIR)/$$1); \
		{ printf "\\$$(printf %03o $$((size / 256 % 256)))\\$$(printf %03o $$((size % 256)))"; \
		  cat $(FIXTURE_DIR)/$$1 $(FIXTURE_DIR)/$$2; } > $(FUZZ_DIR)/seeds/debuglink/$$2; \
	done
	$(Q)strip --strip-all -o $(FUZZ_DIR)/seeds/unwind/eh $(FIXTURE_DIR)/unwind-eh
	$(Q)strip --strip-all --keep-section=.debug_frame -o $(FUZZ_DIR)/seeds/unwind/debugframe \
		$(FIXTURE_DIR)/unwind-debugframe
	$(Q)for f in unwind-eh unwind-ibt; do objcopy --only-section=.eh_frame \
		--only-section=.eh_frame_hdr $(FIXTURE_DIR)/$$f $(FUZZ_DIR)/seeds/unwind/$$f-cfi \
		2>/dev/null; done
	$(Q)objcopy --only-section=.debug_frame $(FIXTURE_DIR)/unwind-debugframe \
		$(FUZZ_DIR)/seeds/unwind/debugframe-cfi 2>/dev/null

fuzz: deps
	$(Q)$(MAKE) --no-print-directory fuzz-build fuzz-seeds
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p tests/fuzz/corpus/$$t $(FUZZ_DIR)/new-$$t; \
		echo "  FUZZ     $$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
			-artifact_prefix=$(FUZZ_DIR)/ \
			-print_final_stats=1 $(FUZZ_DIR)/new-$$t tests/fuzz/corpus/$$t \
			$(FUZZ_DIR)/seeds/$$t > $(FUZZ_DIR)/$$t.log 2>&1 || \
			{ tail -50 $(FUZZ_DIR)/$$t.log; exit 1; }; \
		grep -E 'stat::number_of_executed_units|stat::peak_rss' $(FUZZ_DIR)/$$t.log; \
		$(FUZZ_DIR)/fuzz_$$t -merge=1 tests/fuzz/corpus/$$t $(FUZZ_DIR)/new-$$t \
			> /dev/null 2>&1; \
	done

.PHONY: fuzz fuzz-build fuzz-seeds

# ---- Kernel matrix (tests/integration/test_kernels.py) ---------------------------------------
# Debian 12's own 6.1 kernels, booted under QEMU with an initramfs of busybox, the agent and
# workloads. The pin: KERNEL_ABI is the one place to change when the mirror moves on (the
# fetch fails with how to pick a new one: `apt-cache search linux-image-6.1.0`). The .debs are
# kept in $(KERNEL_CACHE) and never installed; only their vmlinuz is unpacked.
KERNEL_ABI ?= 6.1.0-57
KERNEL_FLAVOURS ?= amd64 cloud-amd64 rt-amd64
KERNEL_DIR := $(TEST_BUILD)/kernels
KERNEL_CACHE := $(BUILD)/kernels/debs
KERNEL_IMAGES := $(KERNEL_FLAVOURS:%=$(KERNEL_DIR)/$(KERNEL_ABI)-%/vmlinuz)
KERNEL_WORKLOADS := $(WORKLOAD_DIR)/deep $(WORKLOAD_DIR)/offcpu tests/kernels/pyhot.py
KERNEL_INITRAMFS := $(KERNEL_DIR)/initramfs.cpio
KERNEL_LIST := $(KERNEL_DIR)/kernels.txt

$(KERNEL_DIR)/$(KERNEL_ABI)-%/vmlinuz: tests/kernels/fetch.sh
	$(Q)tests/kernels/fetch.sh linux-image-$(KERNEL_ABI)-$* $(KERNEL_CACHE) $@

$(KERNEL_INITRAMFS): tests/kernels/initramfs.py tests/kernels/init.sh $(BUILD)/ignis \
		     $(KERNEL_WORKLOADS)
	$(call msg,CPIO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PYTHON) tests/kernels/initramfs.py $@ tests/kernels/init.sh $(BUILD)/ignis \
		--python $(PY_SYSTEM) $(KERNEL_WORKLOADS)

# What the test boots, one "ABI FLAVOUR" line each (rewritten when the pin changes).
$(KERNEL_LIST): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)for f in $(KERNEL_FLAVOURS); do echo "$(KERNEL_ABI) $$f"; done > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

kernels-build: all $(TEST_BUILD)/pprof_dump $(KERNEL_IMAGES) $(KERNEL_INITRAMFS) $(KERNEL_LIST)

test-kernels: deps
	$(Q)$(MAKE) --no-print-directory kernels-build
	$(Q)$(PYTHON) tests/run.py --build $(BUILD) --only 'integration: kernels:'

# The README's "Verified on" table, from the last test run's $(KERNEL_DIR)/kernels.md
# (make test never rewrites the README).
kernels-readme:
	$(Q)$(PYTHON) tests/kernels/readme.py $(KERNEL_DIR)/kernels.md README.md

FORCE:
.PHONY: kernels-build test-kernels kernels-readme FORCE

# ---- Everything -------------------------------------------------------------------------------
TEST_PREREQS := all $(BUILD)/san/ignis $(UNIT_BINS) $(UNIT_SAN_BINS) $(WORKLOADS) $(FUZZ_BINS) \
		$(TEST_BUILD)/pprof_dump $(TEST_BUILD)/mkwindows $(TEST_BUILD)/lifecycle \
		$(TEST_BUILD)/html_page $(KERNEL_IMAGES) $(KERNEL_INITRAMFS) $(KERNEL_LIST)

test-build: $(TEST_PREREQS)

# TESTS=pattern selects integration tests by name; UNIT_ONLY=1 skips them.
test-all: test-build
	$(Q)$(PYTHON) tests/run.py --build $(BUILD) $(if $(TESTS),--only '$(TESTS)') \
		$(if $(UNIT_ONLY),--unit-only)

.PHONY: test-build bench-build bench-run

