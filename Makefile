# Top-level Makefile for LA. Everything builds into build/ (see docs/architecture.md).
#
# Conventions, so that adding a file needs no edit here:
#   wire/*.c            -> the wire: codec, validation, sockets, errors, the
#                          shared-memory layout (linked into all)
#   compact/*.c         -> the compaction engine (build/lib/libla_compact.a)
#   daemon/*.c          -> the daemon framework (connections, config, log,
#                          auth, metrics); the three are build/lib/libla_common.a
#   libla/*.c           -> build/lib/libla.{a,so} (with the wire and what it
#                          calls of compact/, hidden symbols)
#   client/*.c          -> build/lib/libla_client.{a,so}
#   localagent/*.c      -> build/bin/la-localagent
#   store/*.c           -> build/lib/libla_store.a (the GlobalAgent's store
#                          and its query answers; lactl reads stores with it)
#   globalagent/*.c     -> build/bin/la-globalagent (with the store)
#   tools/*.c           -> build/bin/lactl
#   tests/support/*.c   -> linked into every test program
#   tests/unit/test_X.c -> build/tests/test_X        (run by make check)
#   tests/sh/test_X.sh  -> run by make check as test_X (after the build)
#   bench/bench_X.c     -> build/bench/bench_X       (make bench-X)
#   tests/fuzz/fuzz_X.c -> build/fuzz/bin/fuzz_X     (make fuzz; clang)
#   examples/X.c, examples/X/*.c -> build/examples/X (see examples/Makefile.inc)
#   replay/*.c          -> build/bin/la-replay (MPI; see replay/Makefile.inc)

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
ifeq ($(origin FC),default)
FC       := gfortran
endif
MPICC    ?= mpicc
MPIF90   ?= mpif90
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
CPPFLAGS += -D_GNU_SOURCE -Ilibla -Iwire -Icompact -Idaemon -Istore -Iclient -I$(BUILD)/gen
CFLAGS   ?=
# override: CFLAGS or FFLAGS given on the command line add to these
override CFLAGS += -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -pthread
FFLAGS   ?= $(OPT) -Wall -Werror
override FFLAGS += -fPIC
LDLIBS_LA := -lprotobuf-c -ldl -lpthread -lm

# PAPI is optional: libla loads libpapi with dlopen only when a PAPI metric
# is chosen (libla/papi_probe.c), so nothing links it. PAPI_LIB is the name
# (or path) it loads: the soname of the libpapi.so this compiler finds.
# make PAPI=0 builds without papi.h; the PAPI metrics then fail with LA_EPAPI.
PAPI ?= 1
PAPI_LIB ?= $(or $(shell readelf -d "$$($(CC) -print-file-name=libpapi.so)"   2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'),libpapi.so)
$(BUILD)/obj/libla/papi_probe.o: override CFLAGS += $(if $(filter 0,$(PAPI)),\
  -DLA_HAVE_PAPI=0,-DLA_HAVE_PAPI=1 '-DLA_PAPI_SONAME="$(PAPI_LIB)"')
# make FORTRAN=0 builds without the Fortran module (no Fortran compiler).
FORTRAN ?= 1
LDLIBS_DAEMON := -luv -lsodium -lsqlite3 -lprotobuf-c -lpthread -lm
LDLIBS_TEST := -lcmocka

# systemd service notification (daemon/la_notify.c: READY, STATUS,
# WATCHDOG) through libsystemd when it is installed; without it the daemons
# still build and run, but not under the units' Type=notify.
HAVE_SYSTEMD ?= $(shell pkg-config --exists libsystemd 2>/dev/null && echo 1)
ifeq ($(HAVE_SYSTEMD),1)
CPPFLAGS += -DHAVE_SYSTEMD
LDLIBS_DAEMON += -lsystemd
endif

GEN_C    := $(BUILD)/gen/la.pb-c.c
GEN_H    := $(BUILD)/gen/la.pb-c.h

WIRE_SRC    := $(wildcard wire/*.c)
COMPACT_SRC := $(wildcard compact/*.c)
DAEMON_SRC  := $(wildcard daemon/*.c)
LIBLA_SRC  := $(wildcard libla/*.c)
CLIENT_SRC := $(wildcard client/*.c)
LOCAL_SRC  := $(wildcard localagent/*.c)
STORE_SRC  := $(wildcard store/*.c)
GLOBAL_SRC := $(wildcard globalagent/*.c)
TOOLS_SRC  := $(wildcard tools/*.c)
SUPPORT_SRC := $(wildcard tests/support/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard bench/bench_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
# The sources of directory $(1) that run on a libuv loop: those including
# <uv.h>, or a header of $(1) that does, directly or through another such
# header (agent.h, ga.h, uplink_link.h, owners.h...). The others make the
# archives unit tests link without an event loop.
la_inc_any = $(shell grep -l -e '<uv.h>' $(foreach h,$(2),-e '"$(h)"') \
  $(1) 2>/dev/null)
la_uv_h1 = $(notdir $(call la_inc_any,$(1)/*.h,))
la_uv_h2 = $(notdir $(call la_inc_any,$(1)/*.h,$(call la_uv_h1,$(1))))
la_uv_src = $(call la_inc_any,$(1)/*.c,$(call la_uv_h2,$(1)))
WIRE_OBJ    := $(call obj,$(WIRE_SRC)) $(BUILD)/obj/gen/la.pb-c.o
COMPACT_OBJ := $(call obj,$(COMPACT_SRC))
DAEMON_OBJ  := $(call obj,$(DAEMON_SRC))
COMMON_OBJ  := $(WIRE_OBJ) $(COMPACT_OBJ) $(DAEMON_OBJ)
LIBLA_OBJ  := $(call obj,$(LIBLA_SRC))
CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
# The LocalAgent's modules that do not use libuv, for unit tests.
LOCAL_NOUV_OBJ := $(call obj,$(filter-out $(call la_uv_src,localagent),$(LOCAL_SRC)))
LOCAL_NOUV_A := $(if $(LOCAL_NOUV_OBJ),$(BUILD)/lib/libla_localagent.a)
# The GlobalAgent's modules that do not use libuv (the store's files, stitch,
# settings, feed_query), for unit tests and for lactl's offline reading of a
# store.
STORE_OBJ  := $(call obj,$(STORE_SRC))
STORE_A    := $(if $(STORE_SRC),$(BUILD)/lib/libla_store.a)
GLOBAL_NOUV_OBJ := $(STORE_OBJ) \
  $(call obj,$(filter-out $(call la_uv_src,globalagent),$(GLOBAL_SRC)))
GLOBAL_NOUV_A := $(if $(GLOBAL_NOUV_OBJ),$(BUILD)/lib/libla_globalagent.a)
LOCAL_OBJ  := $(call obj,$(LOCAL_SRC))
GLOBAL_OBJ := $(call obj,$(GLOBAL_SRC))
TOOLS_OBJ  := $(call obj,$(TOOLS_SRC))
SUPPORT_OBJ := $(call obj,$(SUPPORT_SRC))

FMOD_SRC := fortran/la_mod.f90
FMOD_OBJ := $(if $(filter-out 0,$(FORTRAN)),$(if $(wildcard $(FMOD_SRC)),$(BUILD)/obj/fortran/la_mod.o))

COMMON_A := $(BUILD)/lib/libla_common.a
COMPACT_A := $(BUILD)/lib/libla_compact.a
LIBLA_A  := $(BUILD)/lib/libla.a
LIBLA_SO := $(BUILD)/lib/libla.so
CLIENT_A := $(if $(CLIENT_SRC),$(BUILD)/lib/libla_client.a)
CLIENT_SO := $(if $(CLIENT_SRC),$(BUILD)/lib/libla_client.so)
BINS := $(if $(wildcard localagent/main.c),$(BUILD)/bin/la-localagent) \
        $(if $(wildcard globalagent/main.c),$(BUILD)/bin/la-globalagent) \
        $(if $(TOOLS_SRC),$(BUILD)/bin/lactl)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps check check-unit check-asan bench demo install clean \
        libs bins tests benches examples format
all: libs bins tests benches examples

libs: $(COMMON_A) $(COMPACT_A) $(STORE_A) $(LIBLA_A) $(LIBLA_SO) $(CLIENT_A) $(CLIENT_SO)
bins: $(BINS)
tests: $(UNIT_BINS)
benches: $(BENCH_BINS) $(BUILD)/bench/fidelity_app

deps:
	@bash scripts/install-deps.sh

# ---------------------------------------------------------------- codegen --
# One run of protoc-c writes both files: a grouped target (&:), so a
# parallel build runs it once (two runs would rewrite la.pb-c.h after
# objects were compiled against it, and the next make rebuild them).
$(GEN_C) $(GEN_H) &: proto/la.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen proto/la.proto

$(BUILD)/obj/gen/la.pb-c.o: $(GEN_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

# ------------------------------------------------------------------ rules --
$(BUILD)/obj/%.o: %.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# The LocalAgent stand-in (tests/support/la_test_peer.c) uses the
# LocalAgent's own app_ipc.h.
$(SUPPORT_OBJ): CPPFLAGS += -Ilocalagent

$(BUILD)/obj/fortran/la_mod.o: $(FMOD_SRC)
	@mkdir -p $(dir $@) $(BUILD)/include
	$(FC) $(FFLAGS) -J$(BUILD)/include -c $< -o $@

$(COMMON_A): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The compaction engine as an archive: the shared libraries take from it
# only the members they call (libla: the spec parser; never the codecs).
$(COMPACT_A): $(COMPACT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBLA_A): $(LIBLA_OBJ) $(WIRE_OBJ) $(COMPACT_OBJ) $(FMOD_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/include
	cp libla/la.h wire/la_errcodes.h wire/la_limits.h $(BUILD)/include/
	rm -f $@ && ar rcs $@ $^

$(LIBLA_SO): $(LIBLA_OBJ) $(WIRE_OBJ) $(FMOD_OBJ) $(COMPACT_A)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,--no-undefined -Wl,-soname,libla.so.0 -o $@ $^ $(LDLIBS_LA)
	ln -sf libla.so $(BUILD)/lib/libla.so.0

$(BUILD)/lib/libla_client.a: $(CLIENT_OBJ) $(WIRE_OBJ) $(COMPACT_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/include
	cp client/la_client.h $(BUILD)/include/ 2>/dev/null || true
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libla_client.so: $(CLIENT_OBJ) $(WIRE_OBJ) $(COMPACT_A)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,--no-undefined -Wl,-soname,libla_client.so.0 -o $@ $^ -lprotobuf-c -lm
	ln -sf libla_client.so $(BUILD)/lib/libla_client.so.0

$(BUILD)/lib/libla_localagent.a: $(LOCAL_NOUV_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(STORE_A): $(STORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libla_globalagent.a: $(GLOBAL_NOUV_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/la-localagent: $(LOCAL_OBJ) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_DAEMON)

$(BUILD)/bin/la-globalagent: $(GLOBAL_OBJ) $(STORE_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_DAEMON)

# The daemons' metrics endpoint (daemon/la_metrics_http.c) serves HTTP with
# libmicrohttpd; nothing else links it.
$(BUILD)/bin/la-localagent $(BUILD)/bin/la-globalagent: LDLIBS_DAEMON += -lmicrohttpd

# lactl whatif partitions with METIS (libmetis-dev); its plots and live view
# embed PNG images (zlib); lactl serve's page is embedded with .incbin.
$(BUILD)/obj/tools/lactl_serve_page.o: tools/lactl_serve_page.html
$(BUILD)/bin/lactl: $(TOOLS_OBJ) $(CLIENT_A) $(STORE_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lmetis -lz $(LDLIBS_DAEMON)

# Tests link the static libraries so internal (hidden) functions are reachable.
# Per-test extra libraries: TEST_LIBS_NAME (linked before libla's own).
# test_papi registers PAPI software-defined counters (libsde).
TEST_LIBS_test_papi := -lsde
# test_lane drives the LocalAgent's lane (a libuv file: in no library).
TEST_LIBS_test_lane := $(BUILD)/obj/localagent/lane.o
$(BUILD)/tests/test_lane: $(BUILD)/obj/localagent/lane.o
# test_part calls lactl whatif's partitioners (tools/lactl_part.c).
TEST_LIBS_test_part := $(BUILD)/obj/tools/lactl_part.o -lmetis
$(BUILD)/tests/test_part: $(BUILD)/obj/tools/lactl_part.o
# test_reclaim calls the GlobalAgent's reclaim.c (libuv: not in GLOBAL_NOUV_A).
TEST_LIBS_test_reclaim := $(BUILD)/obj/globalagent/reclaim.o
$(BUILD)/tests/test_reclaim: $(BUILD)/obj/globalagent/reclaim.o
$(BUILD)/tests/%: tests/unit/%.c $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(GLOBAL_NOUV_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CPPFLAGS) -Itests/support -Ilocalagent -Iglobalagent $(CFLAGS) -o $@ $< \
	  $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(GLOBAL_NOUV_A) \
	  $(COMMON_A) $(LDLIBS_TEST) $(TEST_LIBS_$*) $(LDLIBS_LA) $(LDLIBS_DAEMON)

# lactl's files but its main, for the tests and benchmarks that call them.
LACTL_LIB_OBJ = $(filter-out $(BUILD)/obj/tools/lactl.o,$(TOOLS_OBJ))
# test_serve_bin drives lactl serve's store, reduction thread and HTTP.
TEST_LIBS_test_serve_bin := $(LACTL_LIB_OBJ) $(STORE_A) $(CLIENT_A) $(COMMON_A) -lmetis -lz
$(BUILD)/tests/test_serve_bin: $(LACTL_LIB_OBJ) $(STORE_A)

# Per-benchmark extra libraries: BENCH_LIBS_NAME.
BENCH_LIBS_bench_fidelity := -lmetis
# (libla_common.a again after the store's archive: the store groups ranks
# with compact/la_clusters.c)
BENCH_LIBS_bench_store := $(GLOBAL_NOUV_A) $(COMMON_A)
$(BUILD)/bench/bench_store: $(GLOBAL_NOUV_A)
$(BUILD)/bench/bench_fidelity: bench/fidelity_cases.h bench/fidelity_calib.h
# test_fidelity_calib checks the fidelity benchmark's truth table.
$(BUILD)/tests/test_fidelity_calib: bench/fidelity_calib.h
# bench_serve (docs/lactl.md) runs lactl's reductions and grid picture.
BENCH_LIBS_bench_serve := $(LACTL_LIB_OBJ) $(STORE_A) $(CLIENT_A) $(COMMON_A) -lmetis -lz
$(BUILD)/bench/bench_serve: $(LACTL_LIB_OBJ) $(STORE_A)
# bench_history (docs/history.md) writes to the GlobalAgent's store.
BENCH_LIBS_bench_history := $(GLOBAL_NOUV_A) $(COMMON_A)
$(BUILD)/bench/bench_history: $(GLOBAL_NOUV_A)
# bench_clusters (docs/clusters.md) groups ranks and stores by representatives.
BENCH_LIBS_bench_clusters := $(GLOBAL_NOUV_A) $(COMMON_A)
$(BUILD)/bench/bench_clusters: $(GLOBAL_NOUV_A)
# bench_whatif (docs/performance.md) writes a store file lactl whatif reads.
BENCH_LIBS_bench_whatif := $(GLOBAL_NOUV_A) $(COMMON_A)
$(BUILD)/bench/bench_whatif: $(GLOBAL_NOUV_A)
$(BUILD)/bench/%: bench/%.c $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/support -Ilocalagent -Iglobalagent $(CFLAGS) -O3 -march=native -o $@ $< \
	  $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(COMMON_A) $(BENCH_LIBS_$*) $(LDLIBS_LA) $(LDLIBS_DAEMON)

# The MPI program bench_fidelity runs (built like an example, with mpicc).
$(BUILD)/bench/fidelity_app: bench/fidelity_app.c bench/fidelity_cases.h bench/fidelity_calib.h libla/la.h $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(MPICC) -I$(BUILD)/include $(EXAMPLE_CFLAGS) -o $@ $< $(LIBLA_A) $(LDLIBS_LA)

# The MPI program test_history_e2e runs (built like an example, with mpicc,
# and like the examples only in the normal tree: the sanitized trees' test
# finds it through their examples link).
HISTORY_APP := $(BUILD)/tests/history_app
examples: $(HISTORY_APP)
$(HISTORY_APP): tests/apps/history_app.c libla/la.h $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(MPICC) -I$(BUILD)/include $(EXAMPLE_CFLAGS) -o $@ $< $(LIBLA_A) $(LDFLAGS) $(LDLIBS_LA) -lm

# Fortran test program (run by tests/unit/test_fortran.c).
FTEST := $(if $(wildcard tests/fortran/test_fmod.f90),$(BUILD)/tests/fortran/test_fmod)
tests: $(FTEST)
$(BUILD)/tests/fortran/test_fmod: tests/fortran/test_fmod.f90 $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(FC) $(FFLAGS) -I$(BUILD)/include -J$(dir $@) -o $@ $< $(LIBLA_A) $(LDFLAGS) $(LDLIBS_LA)

# The OpenMP Fortran test program (also run by tests/unit/test_fortran.c).
FTEST_OMP := $(if $(wildcard tests/fortran/test_fomp.f90),$(BUILD)/tests/fortran/test_fomp)
tests: $(FTEST_OMP)
$(BUILD)/tests/fortran/test_fomp: tests/fortran/test_fomp.f90 $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(FC) $(FFLAGS) -fopenmp -I$(BUILD)/include -J$(dir $@) -o $@ $< $(LIBLA_A) $(LDFLAGS) $(LDLIBS_LA)

# Objects are never intermediate files to delete.
.SECONDARY:

-include examples/Makefile.inc
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ------------------------------------------------------------------ check --
# make check: every test (unit, integration, Fortran) on the normal build;
# the tests again in an ASan+UBSan build whose daemons and lactl are
# sanitized too (build/asan/bin, found next to build/asan/tests); the
# daemons' integration tests against ThreadSanitizer daemons (build/tsan/bin);
# and each fuzz target for FUZZ_CHECK_RUNS inputs (skipped without clang).
# Prints one closing line:
#   check: N passed, N failed, N skipped
ASAN_OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
  -fno-sanitize-recover=all
TSAN_OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
FUZZ_CC  ?= clang
FUZZ_OPT := -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 600
FUZZ_CHECK_RUNS ?= 20000
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/bin/%,$(FUZZ_SRC))
TSAN_BINS := $(if $(wildcard localagent/main.c),build/tsan/bin/la-localagent) \
             $(if $(wildcard globalagent/main.c),build/tsan/bin/la-globalagent) \
             build/tsan/bin/lactl

# The four trees are built one after the other, each with one job per CPU
# when make check itself was started without -j (with -jN they share its
# jobs); the tests then run LA_TEST_JOBS at a time (scripts/run-tests.sh).
CHECK_MAKE = j=; case " $$MAKEFLAGS" in *jobserver*|*" -j"*) ;; \
  *) j=-j$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) ;; esac; \
  $(MAKE) $$j --no-print-directory

.PHONY: check-build-asan check-build-tsan fuzz-build fuzz fuzz-check
check:
	@command -v protoc-c >/dev/null && command -v mpicc >/dev/null \
	  && [ -f /usr/include/cmocka.h ] && [ -f /usr/include/uv.h ] \
	  || bash scripts/install-deps.sh
	@$(CHECK_MAKE) all
	@$(CHECK_MAKE) check-build-asan
	@$(CHECK_MAKE) check-build-tsan
	@if command -v $(FUZZ_CC) >/dev/null; then \
	  $(CHECK_MAKE) fuzz-build; \
	else echo "check: fuzz targets not built ($(FUZZ_CC) missing: make deps)"; fi
	@FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) bash scripts/run-tests.sh

# make check-quick: the edit loop's tier, about a minute: the module tests
# that start nothing, and the main integration tests against the real
# daemons, normal build only (no sanitizers, no fuzzing).
QUICK_TESTS = test_auth test_codec test_compact_codec test_compact_fastpath \
  test_compact_maxerr test_compact_maxerr_ref test_compact_polyline \
  test_compact_qrun test_compact_recon test_compact_runs test_compact_spread \
  test_compact_lazysums \
  test_crc32 test_docs test_ga_held test_halo test_history test_part \
  test_layering test_outq \
  test_robust test_seglog_damage test_shm_layout test_sockio test_stitch \
  test_store test_channels test_client test_ga_validate test_globalagent \
  test_ground_truth test_lactl test_libla test_localagent test_numbering
.PHONY: check-quick
check-quick: all
	@bash scripts/run-tests.sh $(QUICK_TESTS)

# make check-rebuild: a fresh clone of the committed HEAD builds with
# make -j2 all running protoc-c once, a second make all has nothing to do,
# and make demo builds only what the demo runs (tests/sh/rebuild.sh). A
# whole build, so not in make check; CI runs it (.ci/run).
.PHONY: check-rebuild
check-rebuild:
	@bash tests/sh/rebuild.sh

# The ASan+UBSan tree: tests, daemons and lactl.
# The MPI programs stay unsanitized (MPICH itself leaks at exit under
# LeakSanitizer): the tree links to build/examples and to build/bin's
# la-replay, so tests that find them next to the daemons run them, as the
# sanitized lactl runs the la-replay beside it.
check-build-asan:
	@$(MAKE) --no-print-directory BUILD=build/asan OPT="$(ASAN_OPT)" \
	  LDFLAGS="-fsanitize=address,undefined" tests bins
	@[ -e build/asan/examples ] || ln -s ../examples build/asan/examples
	@if [ -x build/bin/la-replay ]; then \
	  ln -sfn ../../bin/la-replay build/asan/bin/la-replay; fi

# ThreadSanitizer daemons, and lactl, which the tests that drive them run
# from the same directory (LA_TEST_BIN_DIR=build/tsan/bin; la_td_find_bin
# never falls back to another tree). The tests are not threaded in ways
# TSan needs to see; they run from build/tests.
check-build-tsan:
	@$(MAKE) --no-print-directory BUILD=build/tsan OPT="$(TSAN_OPT)" \
	  LDFLAGS="-fsanitize=thread" $(TSAN_BINS)
	@[ -e build/tsan/examples ] || ln -s ../examples build/tsan/examples

# ------------------------------------------------------------------- fuzz --
# libFuzzer targets (tests/fuzz/fuzz_X.c -> build/fuzz/bin/fuzz_X), built
# with clang in their own tree. `make fuzz` runs each for FUZZ_SECONDS on a
# copy of its seed corpus; `make check` runs each for FUZZ_CHECK_RUNS inputs.
fuzz-build:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found (make deps)"; exit 1; }
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(FUZZ_CC) \
	  OPT="$(FUZZ_OPT)" fuzz-bins

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS) $(BUILD)/bin/gen_seeds

# The seed generator: a plain program on the same libraries.
$(BUILD)/bin/gen_seeds: tests/fuzz/gen_seeds.c $(CLIENT_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(CLIENT_A) $(COMMON_A) $(LDLIBS_DAEMON)

$(BUILD)/bin/fuzz_%: tests/fuzz/fuzz_%.c $(CLIENT_A) $(GLOBAL_NOUV_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/fuzz -Iglobalagent $(CFLAGS) -fsanitize=fuzzer \
	  -o $@ $< $(GLOBAL_NOUV_A) $(CLIENT_A) $(COMMON_A) $(LDLIBS_DAEMON)

fuzz: fuzz-build
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# ------------------------------------------------------------------ bench --
bench: all
	@mkdir -p $(BUILD)/bench
	@bash scripts/run-bench.sh all

bench-%: all
	@mkdir -p $(BUILD)/bench
	@bash scripts/run-bench.sh $*

# ------------------------------------------------------------------- demo --
# Builds only what scripts/demo.sh runs: the daemons, lactl, and the
# heavy and rebalance examples.
DEMO_PROGS = $(BINS) $(BUILD)/examples/heavy $(BUILD)/examples/rebalance
demo:
	@command -v protoc-c >/dev/null && command -v mpicc >/dev/null \
	  || bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory $(DEMO_PROGS)
	@bash scripts/demo.sh

# ---------------------------------------------------------------- install --
# make install [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=] [INCLUDEDIR=] ...
# builds only what it installs (libs, bins and the Fortran module, with the
# given CC, CFLAGS, LDFLAGS), never the tests, examples or benchmarks, then
# copies them; make uninstall removes exactly those files, then the
# directories install made while they are empty (never PREFIX). The Fortran module goes to FMODDIR, a
# directory of its compiler (module files are compiler-specific), which
# la.pc's Cflags and LA::la_fortran name. la.pc links with a run path to
# LIBDIR unless LIBDIR is a directory the loader searches anyway (PC_RPATH=
# leaves it out), so programs built with pkg-config start without
# LD_LIBRARY_PATH.
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share
FC_ID      ?= $(notdir $(FC))-$(firstword $(subst ., ,$(shell $(FC) -dumpversion 2>/dev/null)))
FMODDIR    ?= $(LIBDIR)/fortran/$(FC_ID)
CMAKEDIR   ?= $(LIBDIR)/cmake/LA
PCDIR      ?= $(LIBDIR)/pkgconfig
LA_VERSION  = $(shell sed -n 's/^\#define LA_VERSION_STRING "\(.*\)"/\1/p' wire/la_limits.h)
LA_COMMA   := ,
SYSTEM_LIBDIRS = /lib /lib64 /usr/lib /usr/lib64 \
  $(addsuffix /$(shell $(CC) -print-multiarch 2>/dev/null),/lib /usr/lib)
PC_RPATH   ?= $(if $(filter $(LIBDIR) $(LIBDIR)/,$(SYSTEM_LIBDIRS)),,-Wl$(LA_COMMA)-rpath$(LA_COMMA)$${libdir})
# Every template's @NAME@, as installed (without DESTDIR).
INSTALL_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@FMODDIR@|$(FMODDIR)|g' \
  -e 's|@RPATH@|$(PC_RPATH)|g' -e 's|@VERSION@|$(LA_VERSION)|g' \
  -e 's|@FC_ID@|$(FC_ID)|g'
HAVE_CLIENT := $(if $(CLIENT_SRC),1)
HAVE_FMOD   := $(if $(FMOD_OBJ),1)
# The la_weights Python package (python/, docs/python.md) goes to PYTHONDIR
# with a _installed.py naming LIBDIR, so it loads the libla_client
# installed with it. PYTHONDIR is where Debian's python3 looks for PREFIX's
# packages (PREFIX/lib/python3.X/dist-packages: found as is for PREFIX=/usr
# and /usr/local; install prints the PYTHONPATH to export for another
# prefix). PYTHON= installs no Python package.
PYTHON     ?= /usr/bin/python3
PY_VERSION  = $(if $(PYTHON),$(shell $(PYTHON) -c \
  'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null))
PYTHONDIR  ?= $(PREFIX)/lib/python$(PY_VERSION)/dist-packages
PY_FILES   := $(notdir $(wildcard python/la_weights/*.py))
HAVE_PY     = $(if $(PY_FILES),$(PY_VERSION))
# What install puts, relative to DESTDIR (uninstall removes these).
INSTALLED = $(addprefix $(LIBDIR)/,libla.a libla.so.0 libla.so \
              $(if $(HAVE_CLIENT),libla_client.a libla_client.so.0 libla_client.so)) \
  $(addprefix $(INCLUDEDIR)/,la.h la_errcodes.h la_limits.h $(if $(HAVE_CLIENT),la_client.h)) \
  $(if $(HAVE_FMOD),$(FMODDIR)/la_mod.mod) \
  $(addprefix $(BINDIR)/,$(notdir $(BINS))) \
  $(PCDIR)/la.pc $(if $(HAVE_CLIENT),$(PCDIR)/la_client.pc) \
  $(CMAKEDIR)/LAConfig.cmake $(CMAKEDIR)/LAConfigVersion.cmake \
  $(addprefix $(DATADIR)/doc/la/,README.md LICENSE $(notdir $(wildcard docs/*.md))) \
  $(addprefix $(DATADIR)/la/,$(notdir $(wildcard packaging/*.service packaging/*.conf))) \
  $(if $(HAVE_PY),$(addprefix $(PYTHONDIR)/la_weights/,$(PY_FILES)))
# The directories only LA uses, removed by uninstall once empty.
INSTALLED_DIRS = $(if $(HAVE_FMOD),$(FMODDIR) $(LIBDIR)/fortran) $(CMAKEDIR) \
  $(LIBDIR)/cmake $(DATADIR)/doc/la $(DATADIR)/la \
  $(if $(HAVE_PY),$(PYTHONDIR)/la_weights)
# Every directory install writes into; uninstall removes each, and its
# parents up to PREFIX, while empty. Not for PREFIX=/usr or /usr/local,
# whose directories belong to the system.
INSTALL_MADE_DIRS = $(if $(LA_SYSTEM_PREFIX),,$(patsubst %/,%,$(dir \
  $(INSTALLED) $(MAN_INSTALLED))) $(SYSTEMDUNITDIR) $(SYSCONFDIR)/la)

.PHONY: uninstall install-files
install: install-files install-services
	@echo "LA $(LA_VERSION) installed in $(DESTDIR)$(PREFIX). To build against it:"
	@case ":$$(pkg-config --variable pc_path pkg-config 2>/dev/null):" in \
	  *":$(PCDIR):"*) ;; \
	  *) echo '  export PKG_CONFIG_PATH=$(PCDIR):$$PKG_CONFIG_PATH';; esac
	@echo '  cc $$(pkg-config --cflags la) -c prog.c && cc -o prog prog.o $$(pkg-config --libs la)'
	@echo '  CMake: find_package(LA) with CMAKE_PREFIX_PATH=$(PREFIX) (LA::la, LA::la_client, LA::la_fortran)'
	@$(if $(PC_RPATH),echo '  la.pc links with a run path to $(LIBDIR): the programs need no LD_LIBRARY_PATH',true)
	@$(if $(HAVE_PY),$(PYTHON) -c 'import site; import sys; sys.exit("$(PYTHONDIR)" \
	  not in sys.path + site.getsitepackages())' 2>/dev/null \
	  && echo '  Python ($(PYTHON)): import la_weights' \
	  || echo '  export PYTHONPATH=$(PYTHONDIR)   # then $(PYTHON): import la_weights',true)

install-files: libs bins $(FMOD_OBJ)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) \
	  $(DESTDIR)$(PCDIR) $(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(DATADIR)/doc/la \
	  $(DESTDIR)$(DATADIR)/la
	install -m 644 $(LIBLA_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIBLA_SO) $(DESTDIR)$(LIBDIR)/libla.so.0
	ln -sf libla.so.0 $(DESTDIR)$(LIBDIR)/libla.so
	install -m 644 libla/la.h wire/la_errcodes.h wire/la_limits.h $(DESTDIR)$(INCLUDEDIR)/
	$(if $(HAVE_FMOD),install -d $(DESTDIR)$(FMODDIR) && \
	  install -m 644 $(BUILD)/include/la_mod.mod $(DESTDIR)$(FMODDIR)/)
	$(if $(HAVE_CLIENT),install -m 644 $(CLIENT_A) $(DESTDIR)$(LIBDIR)/ && \
	  install -m 755 $(CLIENT_SO) $(DESTDIR)$(LIBDIR)/libla_client.so.0 && \
	  ln -sf libla_client.so.0 $(DESTDIR)$(LIBDIR)/libla_client.so && \
	  install -m 644 client/la_client.h $(DESTDIR)$(INCLUDEDIR)/)
	$(if $(BINS),install -m 755 $(BINS) $(DESTDIR)$(BINDIR)/)
	$(INSTALL_SUBST) packaging/la.pc.in > $(DESTDIR)$(PCDIR)/la.pc
	$(if $(HAVE_CLIENT),$(INSTALL_SUBST) packaging/la_client.pc.in \
	  > $(DESTDIR)$(PCDIR)/la_client.pc)
	$(INSTALL_SUBST) -e 's|@HAVE_CLIENT@|$(if $(HAVE_CLIENT),1,0)|g' \
	  -e 's|@HAVE_FMOD@|$(if $(HAVE_FMOD),1,0)|g' \
	  packaging/LAConfig.cmake.in > $(DESTDIR)$(CMAKEDIR)/LAConfig.cmake
	$(INSTALL_SUBST) packaging/LAConfigVersion.cmake.in \
	  > $(DESTDIR)$(CMAKEDIR)/LAConfigVersion.cmake
	install -m 644 README.md LICENSE docs/*.md $(DESTDIR)$(DATADIR)/doc/la/
	install -m 644 packaging/*.conf $(DESTDIR)$(DATADIR)/la/
	for u in $(LA_UNITS); do \
	  sed $(LA_UNIT_SED) packaging/$$u > $(DESTDIR)$(DATADIR)/la/$$u \
	  && chmod 644 $(DESTDIR)$(DATADIR)/la/$$u || exit 1; done
	$(if $(HAVE_PY),install -d $(DESTDIR)$(PYTHONDIR)/la_weights && \
	  install -m 644 $(addprefix python/la_weights/,$(filter-out \
	    _installed.py,$(PY_FILES))) $(DESTDIR)$(PYTHONDIR)/la_weights/ && \
	  printf '"""_installed.py: written by make install: where it put libla_client."""\n\nLIBDIR = "%s"\n' \
	    '$(LIBDIR)' > $(DESTDIR)$(PYTHONDIR)/la_weights/_installed.py)

uninstall: uninstall-services uninstall-man
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(if $(HAVE_PY),rm -rf $(DESTDIR)$(PYTHONDIR)/la_weights/__pycache__)
	rmdir $(addprefix $(DESTDIR),$(INSTALLED_DIRS)) 2>/dev/null || true
	@# then the directories install made and their parents below PREFIX,
	@# children first (reverse order), each only while empty
	@for d in $(INSTALL_MADE_DIRS); do \
	  while case "$$d" in "$(PREFIX)"/?*) true;; *) false;; esac; do \
	    echo "$$d"; d=$${d%/*}; done; \
	done | sort -ru | while read -r d; do rmdir "$(DESTDIR)$$d" 2>/dev/null; \
	done; true

# ---------------------------------------------------------- services --
# make install-services: the systemd units, with this installation's paths
# substituted (@BINDIR@, @SYSCONFDIR@, @DOCDIR@), into the system unit
# directory, and the sample configurations into $(SYSCONFDIR)/la unless a
# file of that name is there already (an administrator's file is kept).
# make uninstall-services removes the units, and a configuration only while
# it is still the unchanged sample. Both honour DESTDIR.
# The system's /etc and unit directory for PREFIX=/usr or /usr/local; any
# other prefix keeps them inside it (make install PREFIX=$HOME/la writes
# nothing outside it).
LA_SYSTEM_PREFIX = $(filter /usr /usr/local,$(PREFIX))
SYSCONFDIR ?= $(if $(LA_SYSTEM_PREFIX),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(or $(if $(LA_SYSTEM_PREFIX),$(shell pkg-config \
  --variable=systemdsystemunitdir systemd 2>/dev/null)),$(PREFIX)/lib/systemd/system)
LA_UNITS := $(notdir $(wildcard packaging/*.service))
LA_CONFS := $(notdir $(wildcard packaging/*.conf))
LA_UNIT_SED := -e 's|@BINDIR@|$(BINDIR)|g' \
  -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DATADIR)/doc/la|g'

.PHONY: install-services uninstall-services
install-services:
	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/la
	for u in $(LA_UNITS); do \
	  sed $(LA_UNIT_SED) packaging/$$u > $(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp \
	  && chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp \
	  && mv -f $(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp \
	       $(DESTDIR)$(SYSTEMDUNITDIR)/$$u || exit 1; done
	for c in $(LA_CONFS); do \
	  if [ -e $(DESTDIR)$(SYSCONFDIR)/la/$$c ]; then \
	    echo "install-services: keeping $(DESTDIR)$(SYSCONFDIR)/la/$$c"; \
	  else install -m 644 packaging/$$c $(DESTDIR)$(SYSCONFDIR)/la/$$c \
	    || exit 1; fi; done

uninstall-services:
	rm -f $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(LA_UNITS))
	for c in $(LA_CONFS); do \
	  ! cmp -s packaging/$$c $(DESTDIR)$(SYSCONFDIR)/la/$$c \
	  || rm -f $(DESTDIR)$(SYSCONFDIR)/la/$$c; done
	-rmdir $(DESTDIR)$(SYSCONFDIR)/la 2>/dev/null

# ------------------------------------------------------------ man pages --
# man/NAME.N.scd (scdoc) -> build/man/NAME.N; `make man` skips with a
# message where scdoc is missing. install-man installs them and the bash
# completion of lactl; `make install` does it too (uninstall-man and
# `make uninstall` remove them).
MANDIR   ?= $(DATADIR)/man
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
MAN_INSTALLED = $(foreach p,$(patsubst man/%.scd,%,$(MAN_SRC)),\
  $(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p)) $(BASHCOMPDIR)/lactl
MAN_SRC  := $(wildcard man/*.scd)
MAN_PAGES := $(patsubst man/%.scd,$(BUILD)/man/%,$(MAN_SRC))

.PHONY: man install-man uninstall-man
man:
	@if command -v scdoc >/dev/null; then \
	  $(MAKE) --no-print-directory $(MAN_PAGES); \
	else echo "man: scdoc not found, man pages not built (make deps)"; fi

$(BUILD)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@

install-man: man
	@for p in $(MAN_PAGES); do [ -f $$p ] || continue; \
	  s=$${p##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s; \
	  echo "install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
	  install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/; done
	install -d $(DESTDIR)$(BASHCOMPDIR)
	install -m 644 packaging/bash-completion/lactl $(DESTDIR)$(BASHCOMPDIR)/lactl

install: install-man

uninstall-man:
	rm -f $(addprefix $(DESTDIR),$(MAN_INSTALLED))

uninstall: uninstall-man

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# PostgreSQL (libpq) for the store's second backend (store/store_db_pg.c,
# docs/sharding.md): everything that links the store links libpq.
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)
PQ_LIBS := $(shell pkg-config --libs libpq 2>/dev/null || echo -lpq)
CPPFLAGS += $(PQ_CFLAGS)
LDLIBS_DAEMON += $(PQ_LIBS)
-include replay/Makefile.inc
