# usdtprof: see README.md. `make V=1` prints every command.
OUTPUT := .output
CLANG ?= clang
BPFTOOL ?= /usr/sbin/bpftool
# CC, CXX and ARCH may come from the environment or the command line (as in
# libbpf-tools); make's built-in defaults (cc, g++) are replaced only when the
# user gave nothing.
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif
ifndef ARCH
ARCH := $(shell uname -m | sed 's/x86_64/x86/' | sed 's/aarch64/arm64/' \
	| sed 's/ppc64le/powerpc/' | sed 's/mips.*/mips/' | sed 's/riscv64/riscv/' \
	| sed 's/loongarch64/loongarch/')
endif
MAKEFLAGS += -j$(shell nproc)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# Clang's own system include dirs, for usdt.bpf.h and friends under -target bpf
# (deferred: clang may only be installed by the deps step).
CLANG_BPF_SYS_INCLUDES = $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Iinclude -I$(OUTPUT) \
	-idirafter /usr/include/x86_64-linux-gnu -Wall

# CFLAGS, CXXFLAGS and LDFLAGS may come from the environment or the command line; what
# the build itself needs is added apart (ALL_*), so a user's flags never drop it.
CFLAGS ?= -O2 -g
CXXFLAGS ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) -Wall -Iinclude
ALL_CXXFLAGS = $(CXXFLAGS) -std=gnu++20 -Wall -Wextra -MMD -MP -I$(OUTPUT) -Iinclude -Iuserspace
LDLIBS := -lbpf -lelf -lz -lprotobuf -lcurl -lcpp-httplib -lyaml-cpp -lssl -lcrypto -lcrypt
# make test SANITIZE=address,undefined: any report fails the test (no recovery);
# GCC's uninitialized-use analysis gives false positives under ASan.
ifneq ($(SANITIZE),)
ALL_CXXFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer -Wno-maybe-uninitialized
override LDFLAGS += -fsanitize=$(SANITIZE)
OUTPUT := .output/san
endif

LIB_SRCS := $(filter-out userspace/cli/%,$(wildcard userspace/*/*.cpp))
CLI_SRCS := $(wildcard userspace/cli/*.cpp)
UNIT_SRCS := $(wildcard tests/unit/*.cpp tests/unit/*/*.cpp)
E2E_SRCS := $(wildcard tests/e2e/*.cpp)
# lib*.c are shared libraries (lib*.so), the rest programs.
TARGET_LIB_C := $(wildcard tests/targets/lib*.c)
TARGET_C := $(filter-out $(TARGET_LIB_C),$(wildcard tests/targets/*.c))
TARGET_CXX := $(wildcard tests/targets/*.cpp)

LIB_OBJS := $(LIB_SRCS:%.cpp=$(OUTPUT)/%.o)
CLI_OBJS := $(CLI_SRCS:%.cpp=$(OUTPUT)/%.o)
UNIT_OBJS := $(UNIT_SRCS:%.cpp=$(OUTPUT)/%.o)
E2E_OBJS := $(E2E_SRCS:%.cpp=$(OUTPUT)/%.o)
TARGETS := $(TARGET_C:tests/targets/%.c=$(OUTPUT)/targets/%) \
	$(TARGET_CXX:tests/targets/%.cpp=$(OUTPUT)/targets/%) \
	$(TARGET_LIB_C:tests/targets/%.c=$(OUTPUT)/targets/%.so)
SKELS := $(OUTPUT)/usdtprof.skel.h $(OUTPUT)/exec_events.skel.h
TEST_SKELS := $(OUTPUT)/tests/bpf/sql_shape.skel.h $(OUTPUT)/tests/bpf/content_hash.skel.h
# pprof's schema (userspace/report/proto/profile.proto), compiled by protoc into the library.
PROTO_HDR := $(OUTPUT)/proto/profile.pb.h
PROTO_OBJ := $(OUTPUT)/proto/profile.pb.o
# The HTML viewer's page, style and script (userspace/report/html/), as C++ string
# literals for html_page.cpp.
HTML_ASSETS := $(OUTPUT)/html_assets.h

USDTPROF := $(OUTPUT)/usdtprof
# Synthetic profiles (tools/gen_profile.cpp): the scale bench and the HTML report's scale test.
GEN_PROFILE := $(OUTPUT)/tools/gen_profile

# Installing as a system tool (docs/install.md): make install [PREFIX=/usr/local] [DESTDIR=]
VERSION := $(shell sed -n 's/.*kVersion = "\(.*\)";.*/\1/p' userspace/cli/main.cpp)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MAN_STAMP := $(OUTPUT)/man/.generated
DEB := $(OUTPUT)/usdtprof_$(VERSION)_$(shell dpkg --print-architecture 2>/dev/null || echo amd64).deb
# (Defined before the rules: a rule's prerequisites are expanded when it is read, and
# `test` needs $(DEB).)

# A recipe that fails leaves no half-written target behind to pass for a built one.
.DELETE_ON_ERROR:

.PHONY: all deps test stress unit e2e demo bench bench-scale fuzz clean man install uninstall deb
# Generated in chains of pattern rules: kept, not deleted as intermediates.
# (Not a bare .SECONDARY:, which would also let a missing object of a new
# source file go unbuilt.)
.SECONDARY: $(OUTPUT)/usdtprof.bpf.o $(OUTPUT)/exec_events.bpf.o $(SKELS) $(TEST_SKELS:.skel.h=.bpf.o) $(TEST_SKELS) \
	$(OUTPUT)/proto/profile.pb.cc $(PROTO_HDR)
all: $(USDTPROF)

# Installs missing Debian packages; order-only, so it never forces a rebuild.
deps:
	$(Q)tools/install-deps.sh

$(OUTPUT) $(OUTPUT)/targets:
	$(Q)mkdir -p $@

BPF_HEADERS := $(wildcard bpf/*.bpf.h) include/usdtprof/bpf_shared.h vmlinux/vmlinux.h $(OUTPUT)/sql_table.h
# The SQL-shape lexer's tables (bpf/sql.bpf.h), written by a program from the
# lexer's rules; it runs here, so it is built for this machine (HOSTCC).
HOSTCC ?= gcc
$(OUTPUT)/tools/gen_sql_table: tools/gen_sql_table.c | $(OUTPUT)
	$(call msg,HOSTCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(HOSTCC) -O2 -Wall -Wextra $< -o $@
$(OUTPUT)/sql_table.h: $(OUTPUT)/tools/gen_sql_table
	$(call msg,GEN,$@)
	$(Q)$< > $@
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HEADERS) | deps $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

# The tests' BPF programs (tests/bpf/): pieces of the engine, alone, that e2e
# tests run with BPF_PROG_TEST_RUN.
$(OUTPUT)/tests/bpf/%.bpf.o: tests/bpf/%.bpf.c $(BPF_HEADERS) | deps
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(CLANG_BPF_SYS_INCLUDES) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp && rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# One protoc run writes both files (grouped pattern targets).
$(OUTPUT)/proto/%.pb.cc $(OUTPUT)/proto/%.pb.h: userspace/report/proto/%.proto | deps
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)protoc --proto_path=userspace/report/proto --cpp_out=$(@D) $<

$(PROTO_OBJ): $(OUTPUT)/proto/%.pb.o: $(OUTPUT)/proto/%.pb.cc $(PROTO_HDR)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(ALL_CXXFLAGS) -c $< -o $@

# The skeleton and protobuf headers must exist first (order-only); which
# objects include them, and must be rebuilt when they change, the compiler's
# -MMD dependency files say: a BPF change rebuilds engine.o, not everything.
$(HTML_ASSETS): userspace/report/html/page.html userspace/report/html/viewer.css userspace/report/html/viewer.js | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)for asset in kHtmlPage:userspace/report/html/page.html kHtmlCss:userspace/report/html/viewer.css \
		kHtmlJs:userspace/report/html/viewer.js; do \
		if grep -q ')usdtprof_asset"' "$${asset#*:}"; then echo "$${asset#*:}: holds the delimiter" >&2; exit 1; fi; \
		printf 'inline constexpr char %s[] = R"usdtprof_asset(' "$${asset%%:*}"; \
		cat "$${asset#*:}"; printf ')usdtprof_asset";\n'; \
	done > $@.tmp && mv $@.tmp $@

$(OUTPUT)/%.o: %.cpp | $(SKELS) $(PROTO_HDR) $(HTML_ASSETS) deps
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(ALL_CXXFLAGS) -c $< -o $@

$(OUTPUT)/libusdtprof.a: $(LIB_OBJS) $(PROTO_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(USDTPROF): $(CLI_OBJS) $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Test targets are ordinary programs using the public probe header.
TARGET_HEADERS := include/usdtprof/usdtprof.h $(wildcard tests/targets/*.h)
$(OUTPUT)/targets/%: tests/targets/%.c $(TARGET_HEADERS) | deps $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -pthread $< -o $@
$(OUTPUT)/targets/%.so: tests/targets/%.c $(TARGET_HEADERS) | deps $(OUTPUT)/targets
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -shared -fPIC $< -o $@
$(OUTPUT)/targets/%: tests/targets/%.cpp $(TARGET_HEADERS) | deps $(OUTPUT)/targets
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CXXFLAGS) -Wall -std=gnu++20 -Iinclude -pthread $< -o $@

$(OUTPUT)/unit_tests: $(UNIT_OBJS) $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The e2e tests of the BPF SQL lexer and content hash include their programs' skeletons.
$(OUTPUT)/tests/e2e/test_sql_shape.o $(OUTPUT)/tests/e2e/test_content_hash.o: | $(TEST_SKELS)

$(OUTPUT)/e2e_tests: $(E2E_OBJS) $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

unit: $(OUTPUT)/unit_tests
	$(OUTPUT)/unit_tests

e2e: $(OUTPUT)/e2e_tests $(USDTPROF) $(TARGETS) $(GEN_PROFILE)
	$(OUTPUT)/e2e_tests

# make stress FILTER='name*,[tag]' [RUNS=20]: those e2e tests RUNS times
# beside two CPU-bound processes (tools/stress.sh).
stress: $(OUTPUT)/e2e_tests $(USDTPROF) $(TARGETS) $(GEN_PROFILE)
	$(Q)test -n "$$FILTER" || { echo "usage: make stress FILTER='test name*,[tag]' [RUNS=20]" >&2; exit 2; }
	$(Q)USDTPROF=$(abspath $(USDTPROF)) TARGETS=$(abspath $(OUTPUT)/targets) \
		tools/stress.sh $(or $(RUNS),20) "$$FILTER" $(OUTPUT)/e2e_tests

test: $(OUTPUT)/unit_tests $(OUTPUT)/e2e_tests $(USDTPROF) $(TARGETS) $(GEN_PROFILE) $(DEB)
	$(Q)USDTPROF=$(abspath $(USDTPROF)) TARGETS=$(abspath $(OUTPUT)/targets) USDTPROF_DEB=$(abspath $(DEB)) \
		USDTPROF_FUZZERS=$(abspath $(OUTPUT)/fuzz) tools/run-tests.sh $(OUTPUT)/unit_tests $(OUTPUT)/e2e_tests

$(OUTPUT)/bench/loop_plain: tools/bench/loop.c | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g $< -o $@
$(OUTPUT)/bench/loop_probed: tools/bench/loop.c include/usdtprof/usdtprof.h | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -DPROBED -Iinclude $< -o $@
$(OUTPUT)/bench/loop_probed_nop1: tools/bench/loop.c include/usdtprof/usdtprof.h | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -DPROBED -DUSDTPROF_SINGLE_NOP -Iinclude $< -o $@
$(OUTPUT)/bench/pingpong: tools/bench/pingpong.c include/usdtprof/usdtprof.h | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -pthread -Iinclude $< -o $@
$(OUTPUT)/bench/probe_bench: $(OUTPUT)/tools/bench/probe_bench.o $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(OUTPUT)/bench/path_bench: $(OUTPUT)/tools/bench/path_bench.o $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D) && $(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(OUTPUT)/bench/path_fill: tools/bench/path_fill.c include/usdtprof/usdtprof.h | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -Wall -Iinclude $< -o $@

# Synthetic profiles of any size (tools/gen_profile.cpp): the scale bench and tests.
$(GEN_PROFILE): $(OUTPUT)/tools/gen_profile.o $(OUTPUT)/libusdtprof.a
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/bench/dist_paths: tools/bench/dist_paths.c include/usdtprof/usdtprof.h | deps
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LDFLAGS)

# The engine's text hashes' run time (the SQL lexer, a name's content hash), of this build's
# test programs and of others' beside them.
$(OUTPUT)/bench/text_hash_cost: tools/bench/text_hash_cost.c | deps
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LDFLAGS) -lbpf

# Programs probed through the header, run by hand (docs/benchmarks.md).
HEADER_BENCHES := $(addprefix $(OUTPUT)/bench/,hit_drift hit_inband clock_reads post_trap)
$(HEADER_BENCHES): $(OUTPUT)/bench/%: tools/bench/%.c include/usdtprof/usdtprof.h | deps
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LDFLAGS)

$(OUTPUT)/bench/churn: tools/bench/churn.c include/usdtprof/usdtprof.h | deps
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -Wall -pthread -Iinclude $< -o $@

# Not part of `make test`: figures go to docs/benchmarks.md. The monitor's benches scale
# down with PGB_ROUNDS, PGB_SECONDS, SOAK_SECONDS (see their headers). BASELINE_PATH_BENCH=
# another build's path_bench runs record_stop.sh's replays and monitor_interval.sh's intervals
# beside ours (for --monitor: this tools/bench/path_bench.cpp built against that build's headers
# and libusdtprof.a, as docs/benchmarks.md says). BASELINE_USDTPROF= another usdtprof binary
# runs many_paths_cost.sh's recordings in turn with ours; BASELINE_SQL_LEXER= and
# BASELINE_CONTENT_HASH= another build's .output/tests/bpf/sql_shape.bpf.o and content_hash.bpf.o
# run text_hash_cost's texts in turn with ours.
bench: $(OUTPUT)/bench/probe_bench $(OUTPUT)/bench/loop_plain $(OUTPUT)/bench/loop_probed \
	$(OUTPUT)/bench/loop_probed_nop1 $(OUTPUT)/bench/pingpong \
	$(USDTPROF) $(OUTPUT)/bench/churn $(GEN_PROFILE) $(OUTPUT)/bench/path_bench $(OUTPUT)/bench/path_fill \
	$(OUTPUT)/bench/dist_paths $(OUTPUT)/targets/overhead $(OUTPUT)/bench/text_hash_cost \
	$(OUTPUT)/tests/bpf/sql_shape.bpf.o $(OUTPUT)/tests/bpf/content_hash.bpf.o
	tools/bench/profile_scale.sh $(USDTPROF) $(GEN_PROFILE)
	$(OUTPUT)/bench/path_bench $(OUTPUT)/bench/path_fill
	tools/bench/record_stop.sh $(OUTPUT)/bench/path_bench $(OUTPUT)/bench/path_fill $(BASELINE_PATH_BENCH)
	tools/bench/monitor_interval.sh $(OUTPUT)/bench/path_bench $(OUTPUT)/bench/path_fill $(BASELINE_PATH_BENCH)
	$(OUTPUT)/bench/probe_bench $(OUTPUT)/bench/loop_plain $(OUTPUT)/bench/loop_probed \
		$(OUTPUT)/bench/loop_probed_nop1 $(OUTPUT)/bench/pingpong
	USDTPROF=$(USDTPROF) tools/bench-runtimes.sh 100000 3
	python3 tools/bench/compensation.py $(USDTPROF) $(OUTPUT)/targets 1000 10000 100000
	tools/bench/durations_cost.sh $(USDTPROF) $(OUTPUT)/bench/dist_paths
	tools/bench/many_paths_cost.sh $(USDTPROF) 3 $(BASELINE_USDTPROF)
	$(OUTPUT)/bench/text_hash_cost sql 3 $(OUTPUT)/tests/bpf/sql_shape.bpf.o $(BASELINE_SQL_LEXER)
	$(OUTPUT)/bench/text_hash_cost content 3 $(OUTPUT)/tests/bpf/content_hash.bpf.o $(BASELINE_CONTENT_HASH)
	tools/bench/pg_query_cost.sh $(USDTPROF)
	tools/bench/pgbench_monitor.sh $(USDTPROF)
	tools/bench/monitor_soak.sh $(USDTPROF) $(OUTPUT)/bench/churn

# The scale bench alone (SCALE_PATHS, SCALE_DEPTHS ... in its header; BASELINE=another usdtprof
# binary runs beside it).
bench-scale: $(USDTPROF) $(GEN_PROFILE)
	tools/bench/profile_scale.sh $(USDTPROF) $(GEN_PROFILE) $(BASELINE)

# Open-ended, not part of `make test`: libFuzzer on the profile, USDT argument and probe spec parsers,
# FUZZ_SECONDS each, seeded from tests/fuzz/corpus; new inputs and crashes go
# to $(OUTPUT)/fuzz.
CLANGXX ?= clang++
FUZZ_SECONDS ?= 60
FUZZ_CXXFLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu++20 -g -O1 \
	-Iinclude -Iuserspace
FUZZERS := $(OUTPUT)/fuzz/fuzz_profile $(OUTPUT)/fuzz/fuzz_usdt_arg $(OUTPUT)/fuzz/fuzz_probe_spec
$(OUTPUT)/fuzz/fuzz_profile: userspace/profile/profile.cpp userspace/profile/profile_binary.cpp \
	userspace/profile/profile_json.cpp userspace/base/output_file.cpp userspace/base/text_escape.cpp \
	userspace/base/huge_pages.cpp
$(OUTPUT)/fuzz/fuzz_profile: FUZZ_LIBS := -lz
$(OUTPUT)/fuzz/fuzz_usdt_arg: userspace/target/usdt.cpp
$(OUTPUT)/fuzz/fuzz_usdt_arg: FUZZ_LIBS := -lelf
$(OUTPUT)/fuzz/fuzz_probe_spec: userspace/target/probe_roles.cpp userspace/target/naming.cpp userspace/target/sql.cpp
$(FUZZERS): $(OUTPUT)/fuzz/%: tests/fuzz/%.cpp $(wildcard userspace/*/*.h include/usdtprof/*.h) | deps
	$(call msg,FUZZ-CXX,$@)
	$(Q)mkdir -p $(@D) && $(CLANGXX) $(FUZZ_CXXFLAGS) $(filter %.cpp,$^) $(FUZZ_LIBS) -o $@

# make test (and e2e) replays each corpus and a fixed seed's mutations (tests/e2e/test_fuzz.cpp).
test e2e: $(FUZZERS)

fuzz: $(FUZZERS)
	$(Q)for name in profile usdt_arg probe_spec; do \
		f=$(OUTPUT)/fuzz/fuzz_$$name; log=$$f.log; mkdir -p $(OUTPUT)/fuzz/corpus/$$name; \
		echo "  FUZZ     $$f: $(FUZZ_SECONDS) s, log in $$log"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(OUTPUT)/fuzz/ \
			$(OUTPUT)/fuzz/corpus/$$name tests/fuzz/corpus/$$name >$$log 2>&1 || { tail -n 40 $$log; exit 1; }; \
		grep '^Done' $$log; \
	done

# Generated from the CLI's --help (tools/package/man.sh): one page per subcommand.
$(MAN_STAMP): $(USDTPROF) tools/package/man.sh tools/package/man-common.h2m | deps
	$(call msg,MAN,$(@D))
	$(Q)rm -rf $(@D) && tools/package/man.sh $(USDTPROF) $(@D) && touch $@

man: $(MAN_STAMP)

install: $(USDTPROF) $(MAN_STAMP)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 $(USDTPROF) $(DESTDIR)$(BINDIR)/usdtprof
	$(Q)install -D -m 0644 include/usdtprof/usdtprof.h $(DESTDIR)$(INCLUDEDIR)/usdtprof/usdtprof.h
	$(Q)mkdir -p $(DESTDIR)$(DATADIR)/pkgconfig && sed -e 's|@PREFIX@|$(PREFIX)|' \
		-e 's|@VERSION@|$(VERSION)|' tools/package/usdtprof.pc.in >$(DESTDIR)$(DATADIR)/pkgconfig/usdtprof.pc
	$(Q)install -d $(DESTDIR)$(MANDIR)/man8 && install -m 0644 $(OUTPUT)/man/*.8.gz $(DESTDIR)$(MANDIR)/man8/
	$(Q)install -D -m 0644 tools/package/usdtprof.bash-completion \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/usdtprof
	$(Q)mkdir -p $(DESTDIR)$(SYSTEMDUNITDIR) && sed 's|/usr/local/bin/usdtprof|$(BINDIR)/usdtprof|' \
		tools/usdtprof-monitor@.service >$(DESTDIR)$(SYSTEMDUNITDIR)/usdtprof-monitor@.service
	$(Q)install -d $(DESTDIR)$(DATADIR)/doc/usdtprof/docs && install -m 0644 README.md $(DESTDIR)$(DATADIR)/doc/usdtprof/ \
		&& install -m 0644 docs/*.md $(DESTDIR)$(DATADIR)/doc/usdtprof/docs/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/usdtprof $(DESTDIR)$(DATADIR)/pkgconfig/usdtprof.pc \
		$(DESTDIR)$(MANDIR)/man8/usdtprof.8.gz $(DESTDIR)$(MANDIR)/man8/usdtprof-*.8.gz \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/usdtprof \
		$(DESTDIR)$(SYSTEMDUNITDIR)/usdtprof-monitor@.service
	rm -rf $(DESTDIR)$(INCLUDEDIR)/usdtprof $(DESTDIR)$(DATADIR)/doc/usdtprof

# The Debian package: `make install` staged under PREFIX=/usr, Depends: from dpkg-shlibdeps.
$(DEB): $(USDTPROF) $(MAN_STAMP) tools/package/deb.sh tools/package/usdtprof.pc.in \
	tools/package/usdtprof.bash-completion tools/usdtprof-monitor@.service README.md $(wildcard docs/*.md)
	$(call msg,DEB,$@)
	$(Q)rm -rf $(OUTPUT)/deb && MAKEFLAGS= $(MAKE) --no-print-directory install DESTDIR=$(abspath $(OUTPUT)/deb) \
		PREFIX=/usr SYSTEMDUNITDIR=/usr/lib/systemd/system Q=@ msg= >/dev/null
	$(Q)tools/package/deb.sh $(OUTPUT)/deb $(VERSION) $@ && rm -rf $(OUTPUT)/deb

deb: $(DEB)

demo: $(USDTPROF) $(OUTPUT)/targets/demo
	$(Q)tools/demo.sh $(USDTPROF) $(OUTPUT)/targets/demo

clean:
	rm -rf .output

-include $(wildcard $(OUTPUT)/userspace/*/*.d $(OUTPUT)/tests/*/*.d $(OUTPUT)/tests/unit/*/*.d $(OUTPUT)/tools/*.d $(OUTPUT)/tools/bench/*.d)
