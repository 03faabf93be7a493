# jackdaw — the one entry point.
#
#   make            build everything (BPF objects, skeletons, user space)
#   make test       build and run the test suite (ctest; needs root for eBPF)
#   make demo       build, then run the built-in demo
#   make bench      build and run the benchmarks, writing tests/results/
#   make fuzz       fuzz the trace reader with libFuzzer (FUZZ_SECONDS=60)
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
CCACHE   ?= $(shell command -v ccache 2>/dev/null)
export CCACHE_BASEDIR ?= $(abspath ..)

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
BPF_HDRS  := $(wildcard bpf/*.bpf.h) $(wildcard include/jackdaw/*.h)
VMLINUX_H ?= $(BPF_OUT)/vmlinux.h

.PHONY: all deps bpf user test demo bench fuzz kmod vm-test clean
.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS)

all: user

deps:
	$(Q)scripts/install-deps.sh

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

user: deps bpf
	$(Q)cmake -S user -B $(USER_OUT) -DJDW_BPF_OUT=$(BPF_OUT) $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE)) -Wno-dev > $(OUTPUT)/cmake.log 2>&1 || { cat $(OUTPUT)/cmake.log; exit 1; }
	$(Q)cmake --build $(USER_OUT) -j$(JOBS) $(if $(filter 1,$(V)),--verbose,) -- --no-print-directory

test: user
	$(Q)scripts/run-tests.sh $(USER_OUT)

demo: user
	$(Q)$(USER_OUT)/bin/jackdaw demo -o $(OUTPUT)/demo

bench: user
	$(Q)scripts/run-bench.sh $(USER_OUT)

FUZZ_SECONDS ?= 60
FUZZ_SRCS := user/trace/trace_reader_fuzz.cc user/trace/trace_reader.cc user/trace/event_table.cc \
	user/trace/crc32c.cc
fuzz: deps
	$(Q)mkdir -p $(OUTPUT)/fuzz/corpus
	$(call msg,FUZZ,$(OUTPUT)/fuzz/trace_reader_fuzz)
	$(Q)clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Iinclude -Iuser \
		$(FUZZ_SRCS) -o $(OUTPUT)/fuzz/trace_reader_fuzz
	$(Q)cp -n tests/corpus/*.jdw $(OUTPUT)/fuzz/corpus/ 2>/dev/null || true
	$(Q)$(OUTPUT)/fuzz/trace_reader_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		$(OUTPUT)/fuzz/corpus

kmod:
	$(Q)$(MAKE) -C kmod OUT=$(OUTPUT)/kmod $(if $(KDIR),KDIR=$(KDIR),)

vm-test: user kmod
	$(Q)KMOD_OUT=$(OUTPUT)/kmod scripts/vm-test.sh $(USER_OUT)

clean:
	$(Q)rm -rf $(OUTPUT)
