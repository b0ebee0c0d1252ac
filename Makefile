# Top-level Makefile for LA. Everything builds into build/ (see docs/architecture.md).
#
# Conventions, so that adding a file needs no edit here:
#   common/*.c          -> build/lib/libla_common.a (PIC; linked into all)
#   libla/*.c           -> build/lib/libla.{a,so} (with common, hidden symbols)
#   client/*.c          -> build/lib/libla_client.{a,so}
#   localagent/*.c      -> build/bin/la-localagent
#   globalagent/*.c     -> build/bin/la-globalagent
#   tools/*.c           -> build/bin/lactl
#   tests/support/*.c   -> linked into every test program
#   tests/unit/test_X.c -> build/tests/test_X        (run by make check)
#   bench/bench_X.c     -> build/bench/bench_X       (make bench-X)
#   tests/fuzz/fuzz_X.c -> build/fuzz/bin/fuzz_X     (make fuzz; clang)
#   examples/X.c, examples/X/*.c -> build/examples/X (see examples/Makefile.inc)

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
CPPFLAGS += -D_GNU_SOURCE -Ilibla -Icommon -Iclient -I$(BUILD)/gen
CFLAGS   ?=
CFLAGS   += -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden -pthread
FFLAGS   ?= $(OPT) -Wall -Werror -fPIC
LDLIBS_LA := -lprotobuf-c -lpapi -lpthread -lm
LDLIBS_DAEMON := -luv -lsodium -lsqlite3 -lprotobuf-c -lpthread -lm
LDLIBS_TEST := -lcmocka

GEN_C    := $(BUILD)/gen/la.pb-c.c
GEN_H    := $(BUILD)/gen/la.pb-c.h

COMMON_SRC := $(wildcard common/*.c)
LIBLA_SRC  := $(wildcard libla/*.c)
CLIENT_SRC := $(wildcard client/*.c)
LOCAL_SRC  := $(wildcard localagent/*.c)
GLOBAL_SRC := $(wildcard globalagent/*.c)
TOOLS_SRC  := $(wildcard tools/*.c)
SUPPORT_SRC := $(wildcard tests/support/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard bench/bench_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ := $(call obj,$(COMMON_SRC)) $(BUILD)/obj/gen/la.pb-c.o
# What libla needs of common/ (it must not pull in libuv, libsodium, sqlite).
LIBLA_COMMON_OBJ := $(call obj,common/la_codec.c common/la_sockio.c common/la_errors.c common/la_crc32.c \
                     common/la_sysv.c \
                     $(wildcard common/la_compact*.c)) $(BUILD)/obj/gen/la.pb-c.o
LIBLA_OBJ  := $(call obj,$(LIBLA_SRC))
CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
# The LocalAgent's modules that do not use libuv, for unit tests.
LOCAL_NOUV_OBJ := $(call obj,$(filter-out localagent/main.c localagent/session.c \
  localagent/listener.c localagent/worker.c localagent/uplink.c \
  localagent/control.c,$(LOCAL_SRC)))
LOCAL_NOUV_A := $(if $(LOCAL_NOUV_OBJ),$(BUILD)/lib/libla_localagent.a)
# The GlobalAgent's modules that do not use libuv (the store's files, stitch,
# settings, feed_query), for unit tests and for lactl's offline reading of a
# store.
GLOBAL_NOUV_OBJ := $(call obj,$(filter globalagent/store%.c globalagent/stitch.c \
  globalagent/settings.c globalagent/feed_query.c,$(GLOBAL_SRC)))
GLOBAL_NOUV_A := $(if $(GLOBAL_NOUV_OBJ),$(BUILD)/lib/libla_globalagent.a)
LOCAL_OBJ  := $(call obj,$(LOCAL_SRC))
GLOBAL_OBJ := $(call obj,$(GLOBAL_SRC))
TOOLS_OBJ  := $(call obj,$(TOOLS_SRC))
SUPPORT_OBJ := $(call obj,$(SUPPORT_SRC))

FMOD_SRC := fortran/la_mod.f90
FMOD_OBJ := $(if $(wildcard $(FMOD_SRC)),$(BUILD)/obj/fortran/la_mod.o)

COMMON_A := $(BUILD)/lib/libla_common.a
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

libs: $(COMMON_A) $(LIBLA_A) $(LIBLA_SO) $(CLIENT_A) $(CLIENT_SO)
bins: $(BINS)
tests: $(UNIT_BINS)
benches: $(BENCH_BINS) $(BUILD)/bench/fidelity_app

deps:
	@bash scripts/install-deps.sh

# ---------------------------------------------------------------- codegen --
$(GEN_C) $(GEN_H): proto/la.proto
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

$(LIBLA_A): $(LIBLA_OBJ) $(LIBLA_COMMON_OBJ) $(FMOD_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/include
	cp libla/la.h common/la_errcodes.h $(BUILD)/include/
	rm -f $@ && ar rcs $@ $^

$(LIBLA_SO): $(LIBLA_OBJ) $(LIBLA_COMMON_OBJ) $(FMOD_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libla.so.0 -o $@ $^ $(LDLIBS_LA)
	ln -sf libla.so $(BUILD)/lib/libla.so.0

$(BUILD)/lib/libla_client.a: $(CLIENT_OBJ) $(LIBLA_COMMON_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/include
	cp client/la_client.h $(BUILD)/include/ 2>/dev/null || true
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libla_client.so: $(CLIENT_OBJ) $(LIBLA_COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libla_client.so.0 -o $@ $^ -lprotobuf-c -lm
	ln -sf libla_client.so $(BUILD)/lib/libla_client.so.0

$(BUILD)/lib/libla_localagent.a: $(LOCAL_NOUV_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libla_globalagent.a: $(GLOBAL_NOUV_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/la-localagent: $(LOCAL_OBJ) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_DAEMON)

$(BUILD)/bin/la-globalagent: $(GLOBAL_OBJ) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_DAEMON)

$(BUILD)/bin/lactl: $(TOOLS_OBJ) $(CLIENT_A) $(GLOBAL_NOUV_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_DAEMON)

# Tests link the static libraries so internal (hidden) functions are reachable.
# Per-test extra libraries: TEST_LIBS_NAME (linked before libla's own).
# test_papi registers PAPI software-defined counters (libsde).
TEST_LIBS_test_papi := -lsde
$(BUILD)/tests/%: tests/unit/%.c $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(GLOBAL_NOUV_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CPPFLAGS) -Itests/support -Ilocalagent -Iglobalagent $(CFLAGS) -o $@ $< \
	  $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(GLOBAL_NOUV_A) \
	  $(COMMON_A) $(LDLIBS_TEST) $(TEST_LIBS_$*) $(LDLIBS_LA) $(LDLIBS_DAEMON)

# Per-benchmark extra libraries: BENCH_LIBS_NAME.
BENCH_LIBS_bench_fidelity := -lmetis
BENCH_LIBS_bench_store := $(GLOBAL_NOUV_A)
$(BUILD)/bench/bench_store: $(GLOBAL_NOUV_A)
$(BUILD)/bench/bench_fidelity: bench/fidelity_cases.h
$(BUILD)/bench/%: bench/%.c $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(COMMON_A) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/support -Ilocalagent -Iglobalagent $(CFLAGS) -O3 -march=native -o $@ $< \
	  $(SUPPORT_OBJ) $(LIBLA_A) $(CLIENT_A) $(LOCAL_NOUV_A) $(COMMON_A) $(BENCH_LIBS_$*) $(LDLIBS_LA) $(LDLIBS_DAEMON)

# The MPI program bench_fidelity runs (built like an example, with mpicc).
$(BUILD)/bench/fidelity_app: bench/fidelity_app.c bench/fidelity_cases.h libla/la.h $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(MPICC) -I$(BUILD)/include $(EXAMPLE_CFLAGS) -o $@ $< $(LIBLA_A) $(LDLIBS_LA)

# Fortran test program (run by tests/unit/test_fortran.c).
FTEST := $(if $(wildcard tests/fortran/test_fmod.f90),$(BUILD)/tests/fortran/test_fmod)
tests: $(FTEST)
$(BUILD)/tests/fortran/test_fmod: tests/fortran/test_fmod.f90 $(LIBLA_A)
	@mkdir -p $(dir $@)
	$(FC) $(FFLAGS) -I$(BUILD)/include -o $@ $< $(LIBLA_A) $(LDFLAGS) $(LDLIBS_LA)

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
             $(if $(wildcard globalagent/main.c),build/tsan/bin/la-globalagent)

.PHONY: check-build-asan check-build-tsan fuzz-build fuzz fuzz-check
check:
	@command -v protoc-c >/dev/null && command -v mpicc >/dev/null \
	  && [ -f /usr/include/cmocka.h ] && [ -f /usr/include/uv.h ] \
	  || bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory check-build-asan
	@$(MAKE) --no-print-directory check-build-tsan
	@$(MAKE) --no-print-directory fuzz-build \
	  || echo "check: fuzz targets not built (is clang installed? make deps)"
	@FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) bash scripts/run-tests.sh

# The ASan+UBSan tree: tests, daemons and lactl.
# The examples (MPI programs) stay unsanitized: the trees link to
# build/examples so tests that find them next to the daemons run them.
check-build-asan:
	@$(MAKE) --no-print-directory BUILD=build/asan OPT="$(ASAN_OPT)" \
	  LDFLAGS="-fsanitize=address,undefined" tests bins
	@[ -e build/asan/examples ] || ln -s ../examples build/asan/examples

# ThreadSanitizer daemons only (the tests that drive them are not threaded
# in ways TSan needs to see; they run from build/tests).
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
demo:
	@command -v protoc-c >/dev/null && command -v mpicc >/dev/null \
	  || bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory all
	@bash scripts/demo.sh

# ---------------------------------------------------------------- install --
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBLA_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBLA_SO) $(DESTDIR)$(PREFIX)/lib/libla.so.0
	ln -sf libla.so.0 $(DESTDIR)$(PREFIX)/lib/libla.so
	install -m 644 libla/la.h common/la_errcodes.h $(DESTDIR)$(PREFIX)/include/
	[ ! -f $(BUILD)/include/la_mod.mod ] || \
	  install -m 644 $(BUILD)/include/la_mod.mod $(DESTDIR)$(PREFIX)/include/
	[ -z "$(CLIENT_SRC)" ] || { install -m 644 $(CLIENT_A) $(DESTDIR)$(PREFIX)/lib/; \
	  install -m 755 $(CLIENT_SO) $(DESTDIR)$(PREFIX)/lib/libla_client.so.0; \
	  ln -sf libla_client.so.0 $(DESTDIR)$(PREFIX)/lib/libla_client.so; \
	  install -m 644 client/la_client.h $(DESTDIR)$(PREFIX)/include/; }
	for b in $(BINS); do install -m 755 $$b $(DESTDIR)$(PREFIX)/bin/; done
	sed -e 's|@PREFIX@|$(PREFIX)|g' packaging/la.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/la.pc
	[ -z "$(CLIENT_SRC)" ] || sed -e 's|@PREFIX@|$(PREFIX)|g' \
	  packaging/la_client.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/la_client.pc
	install -d $(DESTDIR)$(PREFIX)/share/doc/la $(DESTDIR)$(PREFIX)/share/la
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/la/
	install -m 644 packaging/*.service packaging/*.conf $(DESTDIR)$(PREFIX)/share/la/

# ------------------------------------------------------------ man pages --
# man/NAME.N.scd (scdoc) -> build/man/NAME.N; `make man` skips with a
# message where scdoc is missing. install-man installs them and the bash
# completion of lactl; `make install` does it too.
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
MAN_SRC  := $(wildcard man/*.scd)
MAN_PAGES := $(patsubst man/%.scd,$(BUILD)/man/%,$(MAN_SRC))

.PHONY: man install-man
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

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
