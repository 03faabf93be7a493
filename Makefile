# jackdaw — the one entry point.
#
#   make            build everything (BPF objects, skeletons, user space, man pages)
#   make test       build and run the test suite (ctest; needs root for eBPF)
#   make demo       build jackdaw and the test server only, then run the built-in demo
#   make install    install the binaries, schemas and man pages (PREFIX=/usr/local, DESTDIR=)
#   make bench      build and run the benchmarks, writing tests/results/
#   make fuzz       fuzz traces, metadata, records+join and schemas (FUZZ_SECONDS=60 each)
#   make kmod       build jackdaw.ko against Debian's linux-headers (KDIR=... overrides)
#   make vm-test    boot Debian's kernel in qemu and test the module there
#   make clean
#
# Quiet by default; V=1 shows full commands. VMLINUX_H=path overrides the
# vmlinux.h generated from the running kernel's BTF.

OUTPUT   ?= $(abspath build)
BPF_OUT  := $(OUTPUT)/bpf
USER_OUT := $(OUTPUT)/user
CLANG    ?= clang
BPFTOOL  ?= bpftool
JOBS     ?= $(shell nproc)
ARCH     := x86
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
# Rebuilds of several checkouts share one compiler cache; paths below the
# checkout's parent are hashed relative, so sibling checkouts hit each other.
# With -g ccache also hashes the build directory unless the debug info's
# paths are mapped: mapped to the checkout, a fresh clone elsewhere hits.
CCACHE   ?= $(shell command -v ccache 2>/dev/null)
export CCACHE_BASEDIR ?= $(abspath ..)
PREFIX_MAP := -fdebug-prefix-map=$(abspath .)=.

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(patsubst $(abspath .)/%,%,$(2))";
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/%.skel.h,$(BPF_SRCS))
# Programs only the benchmarks load (empty-hook floors, batching and bare
# variants): `make demo` and `make install` leave them unbuilt.
BPF_BENCH_SRCS := $(wildcard bpf/bench_*.bpf.c) bpf/interact_floor.bpf.c
BPF_CORE_SKELS := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/%.skel.h,$(filter-out $(BPF_BENCH_SRCS),$(BPF_SRCS)))
BPF_HDRS  := $(wildcard bpf/*.bpf.h) $(wildcard include/jackdaw/*.h)
VMLINUX_H ?= $(BPF_OUT)/vmlinux.h

MAN_OUT  := $(OUTPUT)/man
PREFIX   ?= /usr/local
DESTDIR  ?=
# What `make demo` and `make install` build: jackdaw and what it runs from
# beside itself (the test server, its load driver, the workload process).
BINARIES := jackdaw jackdaw-testserver jackdaw-load jackdaw-workload
# install-deps.sh mode: everything by default, --demo for the demo's build
# (set per target below; prerequisites inherit it).
DEPS_MODE ?=

.PHONY: all deps bpf configure user binaries man install deb test demo bench fuzz kmod vm-test clean
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS)

# The man pages after the build, not beside it: both steps run cmake --build
# in one build directory, which two at once (make -j) corrupt.
all: user
	$(Q)$(MAKE) --no-print-directory man

deps:
	$(Q)scripts/install-deps.sh $(DEPS_MODE)

bpf: $(BPF_SKELS)

$(BPF_OUT):
	$(Q)mkdir -p $@

$(BPF_OUT)/vmlinux.h: | $(BPF_OUT)
	$(call msg,GEN,$@)
	$(Q)test -r $(VMLINUX_BTF) || { echo "jackdaw: $(VMLINUX_BTF) missing: this kernel has no BTF; build on a kernel with CONFIG_DEBUG_INFO_BTF=y or pass VMLINUX_H=path/to/vmlinux.h" >&2; exit 2; }
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(VMLINUX_H) | $(BPF_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
		-I$(dir $(VMLINUX_H)) -Iinclude -Ibpf -idirafter /usr/include/$(shell gcc -dumpmachine) \
		-c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(BPF_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name jdw_$(subst -,_,$*)_bpf > $@

configure: deps $(BPF_CORE_SKELS)
	$(Q)cmake -S user -B $(USER_OUT) -DJDW_BPF_OUT=$(BPF_OUT) $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE) "-DCMAKE_CXX_FLAGS=$(PREFIX_MAP)" "-DCMAKE_C_FLAGS=$(PREFIX_MAP)") -Wno-dev > $(OUTPUT)/cmake.log 2>&1 || { cat $(OUTPUT)/cmake.log; exit 1; }

user: configure bpf
	$(Q)cmake --build $(USER_OUT) -j$(JOBS) $(if $(filter 1,$(V)),--verbose,) -- --no-print-directory

binaries: configure
	$(Q)cmake --build $(USER_OUT) -j$(JOBS) $(if $(filter 1,$(V)),--verbose,) $(addprefix --target ,$(BINARIES)) -- --no-print-directory

# Man pages come from the CLI's own definitions (jackdaw help-man), so they
# cannot drift from the options the binary takes.
man: binaries
	$(call msg,MAN,$(MAN_OUT))
	$(Q)mkdir -p $(MAN_OUT)
	$(Q)$(USER_OUT)/bin/jackdaw help-man > $(MAN_OUT)/jackdaw.1
	$(Q)for c in $$($(USER_OUT)/bin/jackdaw help-man --list); do \
		$(USER_OUT)/bin/jackdaw help-man $$c > $(MAN_OUT)/jackdaw-$$c.1 || exit 1; \
	done

install: DEPS_MODE := --demo
install: binaries man
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/jackdaw/schemas $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(Q)install -m 755 $(addprefix $(USER_OUT)/bin/,$(BINARIES)) $(DESTDIR)$(PREFIX)/bin/
	$(Q)install -m 644 user/schemas/*.schema $(DESTDIR)$(PREFIX)/share/jackdaw/schemas/
	$(Q)install -m 644 $(MAN_OUT)/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	$(Q)$(USER_OUT)/bin/jackdaw help-completion > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/jackdaw
	@echo "  INSTALL  $(DESTDIR)$(PREFIX): bin/jackdaw, share/jackdaw/schemas, share/man/man1, share/bash-completion"

# A Debian package of the binaries (build/jackdaw_VERSION_ARCH.deb):
# sudo apt install ./build/jackdaw_*.deb
deb: DEPS_MODE := --demo
deb: binaries
	$(Q)scripts/make-deb.sh $(USER_OUT)/bin user/schemas $(OUTPUT)

test: user
	$(Q)scripts/run-tests.sh $(USER_OUT)

demo: DEPS_MODE := --demo
demo: binaries
	$(Q)$(USER_OUT)/bin/jackdaw demo -o $(OUTPUT)/demo

bench: user
	$(Q)scripts/run-bench.sh $(USER_OUT)

# One libFuzzer binary, five targets over the parsed structures (see
# tests/fuzz/fuzz_targets.h), each run FUZZ_SECONDS on its own corpus seeded
# from real traces and the shipped schemas.
FUZZ_SECONDS ?= 60
FUZZ_OUT  := $(OUTPUT)/fuzz
FUZZ_SRCS := $(filter-out %_test.cc %_bench.cc,$(wildcard user/trace/*.cc user/schema/*.cc user/reorder/*.cc)) \
	user/join/extractor.cc user/join/extract_requests.cc tests/fuzz/fuzz_targets.cc tests/fuzz/libfuzzer_main.cc
fuzz: user
	$(Q)mkdir -p $(FUZZ_OUT)/corpus/file $(FUZZ_OUT)/corpus/metadata $(FUZZ_OUT)/corpus/records $(FUZZ_OUT)/corpus/compressed $(FUZZ_OUT)/corpus/schema
	$(call msg,FUZZ,$(FUZZ_OUT)/jackdaw_fuzz)
	$(Q)clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Iinclude -Iuser -Itests \
		-I$(USER_OUT)/trace -DJDW_SCHEMA_DIR='"$(abspath user/schemas)"' -DJDW_CORPUS_DIR='"$(abspath tests/corpus)"' \
		-DJDW_JOIN_HAS_TRACE=1 $(FUZZ_SRCS) -lzstd -o $(FUZZ_OUT)/jackdaw_fuzz
	$(Q)cp -n tests/corpus/*.jdw $(FUZZ_OUT)/corpus/file/ 2>/dev/null || true
	$(Q)cp -n tests/corpus/*.jdw $(FUZZ_OUT)/corpus/records/ 2>/dev/null || true
	$(Q)cp -n tests/corpus/*.jdw $(FUZZ_OUT)/corpus/compressed/ 2>/dev/null || true
	$(Q)cp -n user/schemas/*.schema $(FUZZ_OUT)/corpus/schema/ 2>/dev/null || true
	$(Q)for f in tests/corpus/*.jdw; do tail -c +33 "$$f" | head -c 16384 > $(FUZZ_OUT)/corpus/metadata/$$(basename $$f).json; done
	$(Q)for t in file metadata records compressed schema; do \
		echo "  FUZZ     $$t for $(FUZZ_SECONDS) s"; \
		JDW_FUZZ_TARGET=$$t $(FUZZ_OUT)/jackdaw_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/crash-$$t- $(FUZZ_OUT)/corpus/$$t \
			> $(FUZZ_OUT)/$$t.log 2>&1 || { tail -40 $(FUZZ_OUT)/$$t.log; exit 1; }; \
		grep -E "^stat::number_of_executed_units" $(FUZZ_OUT)/$$t.log; \
	done

kmod:
	$(Q)$(MAKE) -C kmod OUT=$(OUTPUT)/kmod $(if $(KDIR),KDIR=$(KDIR),)

vm-test: user kmod
	$(Q)KMOD_OUT=$(OUTPUT)/kmod scripts/vm-test.sh $(USER_OUT)

clean:
	$(Q)rm -rf $(OUTPUT)
