# transitd — the only build entry point.
#
#   make run    install what is missing, build, import a default dataset, serve it
#   make test   install what is missing, build, run every unit and API test
#   make test SANITIZE=1   the same suite under ASan + UBSan + LeakSanitizer
#   make RELEASE=1 ...     build/release: -DNDEBUG, assert() off. `make run` and every
#                          `make bench*` use it; tests and sanitizer builds keep the asserts
#   make fuzz FUZZ_S=60    each libFuzzer target (tests/fuzz) for FUZZ_S seconds;
#                          CI runs `make fuzz-smoke` (10 s each)
#
# Sources are picked up by wildcard: adding a module means adding a file.

UNAME_S := $(shell uname -s)

ifeq ($(SANITIZE),1)
BUILD ?= build/sanitize
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT := -O1 -g
else ifeq ($(RELEASE),1)
BUILD ?= build/release
SAN_FLAGS :=
OPT := -O2 -g -DNDEBUG
else
BUILD ?= build
SAN_FLAGS :=
OPT := -O2 -g
endif

CC := clang
OBJC := clang
PKGS := libmicrohttpd gnutls sqlite3 zlib libzip jansson libprotobuf-c libcurl libbrotlienc libdeflate nettle libzstd

ifeq ($(UNAME_S),Darwin)
# Homebrew's sqlite is keg-only; prefer it (FTS5) over the system one.
BREW_PREFIX := $(shell brew --prefix 2>/dev/null)
# openssl@3 (keg-only too) is only bench_hash's peer.
export PKG_CONFIG_PATH := $(BREW_PREFIX)/opt/sqlite/lib/pkgconfig:$(BREW_PREFIX)/opt/zlib/lib/pkgconfig:$(BREW_PREFIX)/opt/openssl@3/lib/pkgconfig:$(PKG_CONFIG_PATH)
OBJC_FLAGS := -fobjc-exceptions
OBJC_LIBS := -framework Foundation
PLATFORM_LIBS :=
else
OBJC_FLAGS := $(shell gnustep-config --objc-flags 2>/dev/null | sed -e 's/-MMD//' -e 's/-MP//') \
              -fobjc-runtime=gcc -I$(shell gcc -print-file-name=include) -Wno-unused-command-line-argument
OBJC_LIBS := $(shell gnustep-config --base-libs 2>/dev/null)
PLATFORM_LIBS := -lpthread -lm
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
# the Brotli decoder: only the tests decode what the server encodes
TEST_PKG_LIBS := $(shell pkg-config --libs libbrotlidec 2>/dev/null)

WARN := -Wall -Wextra -Werror
CFLAGS_ALL := -std=c11 $(OPT) $(WARN) $(SAN_FLAGS) -D_DEFAULT_SOURCE -D_DARWIN_C_SOURCE -Iinclude -Isrc $(PKG_CFLAGS) $(CFLAGS)
OBJCFLAGS_ALL := $(OPT) $(OBJC_FLAGS) $(WARN) -Wno-unknown-warning-option $(SAN_FLAGS) -Iinclude -Isrc $(PKG_CFLAGS)
LDFLAGS_ALL := $(SAN_FLAGS) $(LDFLAGS)
LIBS := $(PKG_LIBS) $(PLATFORM_LIBS)

# src/ holds one folder per layer (see docs/ARCHITECTURE.md); every .c in
# them but the CLI's main() goes into libtransit.a.
LAYERS := base import store engine live serving api http client cli
LIB_SRC := $(filter-out src/cli/main.c,$(wildcard $(addprefix src/,$(addsuffix /*.c,$(LAYERS)))))
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
SRC_HDR := $(wildcard src/*/*.h)
# GTFS-Realtime: protoc-c compiles proto/gtfs-realtime.proto into $(BUILD)/gen at build
# time (never committed); only src/live/rt_feed.c, rt_vehicle.c, rt_encode.c and
# rt_encode_vehicles.c see its types.
GEN := $(BUILD)/gen
RT_PB_C := $(GEN)/gtfs-realtime.pb-c.c
RT_PB_H := $(GEN)/gtfs-realtime.pb-c.h
RT_PB_OBJ := $(BUILD)/obj/gtfs-realtime.pb-c.o
RT_PB_USERS := $(BUILD)/obj/live/rt_feed.o $(BUILD)/obj/live/rt_encode.o \
               $(BUILD)/obj/live/rt_vehicle.o $(BUILD)/obj/live/rt_encode_vehicles.o
OBJC_SRC := $(wildcard objc/*.m)
OBJC_OBJ := $(patsubst objc/%.m,$(BUILD)/objc/%.o,$(OBJC_SRC))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_C := $(wildcard bench/*.c)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_C))

LIBTRANSIT := $(BUILD)/libtransit.a
# The phone's library (include/transit/client.h, issue #25): the layers a query needs and
# the live files a board reads (no alerts or realtime are given to it, but the board
# code refers to them); nothing that links libmicrohttpd, libcurl, protobuf or Objective-C.
CLIENT_LIB := $(BUILD)/libtransit_client.a
CLIENT_OBJ := $(filter $(BUILD)/obj/base/% $(BUILD)/obj/store/% $(BUILD)/obj/engine/% \
                $(BUILD)/obj/api/% $(BUILD)/obj/client/%,$(LIB_OBJ)) \
              $(BUILD)/obj/live/alert_view.o $(BUILD)/obj/live/alert_record.o $(BUILD)/obj/live/alert_text.o \
              $(BUILD)/obj/live/rt_overlay.o $(BUILD)/obj/live/rt_stop_pack.o \
              $(BUILD)/obj/live/rt_vehicles.o $(BUILD)/obj/live/rt_assigned.o $(BUILD)/obj/live/rt_trip_properties.o \
              $(BUILD)/obj/live/rt_row_index.o $(BUILD)/obj/live/rt_grid_leads.o
# what an app links besides it (module.modulemap says the same to Xcode)
ifeq ($(UNAME_S),Darwin)
CLIENT_PKGS := sqlite3 zlib libzstd jansson        # SHA-256 from CommonCrypto (libSystem)
else
CLIENT_PKGS := sqlite3 zlib libzstd jansson nettle
endif
CLIENT_LIBS := $(shell pkg-config --libs $(CLIENT_PKGS) 2>/dev/null) $(PLATFORM_LIBS)
# programs an app could be: they include only transit/client.h and link only the above
# (tests/client: the equivalence tests' answerer and the README's example; bench/client:
# cold start)
CLIENT_BIN := $(patsubst tests/client/%.c,$(BUILD)/client/%,$(wildcard tests/client/*.c)) \
              $(patsubst bench/client/%.c,$(BUILD)/client/%,$(wildcard bench/client/*.c))
TRANSITD := $(BUILD)/transitd
BASELINE := $(BUILD)/bench/hello_mhd

DATA ?= data
FEED ?=
PORT ?= 8080
# The first python3 that has pytest, requests and brotli (pyenv's, or Debian's after `make deps`).
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import pytest, requests, brotli' 2>/dev/null && { echo $$p; break; }; done)

.PHONY: client all deps run serve-release release-build test unit api bench bench-smoke bench-import bench-query bench-csv bench-hash bench-import-scale bench-calendars bench-merge bench-merge-reuse bench-http bench-alerts bench-realtime bench-realtime-large bench-compression bench-tls bench-replicas bench-client bench-national bench-streams clean demo-feed

all: $(TRANSITD)

# What `make test` needs (run time + tests and benchmarks), and what `make run` needs.
deps:
	@bash .ci/deps test

deps-run:
	@bash .ci/deps run

$(BUILD)/obj/%.o: src/%.c $(wildcard include/transit/*.h) $(SRC_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(RT_PB_C): proto/gtfs-realtime.proto
	@mkdir -p $(GEN)
	protoc-c --proto_path=proto --c_out=$(GEN) proto/gtfs-realtime.proto
$(RT_PB_H): $(RT_PB_C) ;

$(RT_PB_OBJ): $(RT_PB_C) $(RT_PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(GEN) -c $< -o $@

$(RT_PB_USERS): CFLAGS_ALL += -I$(GEN)
$(RT_PB_USERS): $(RT_PB_H)

$(BUILD)/objc/%.o: objc/%.m $(wildcard include/transit/*.h) $(wildcard objc/*.h)
	@mkdir -p $(dir $@)
	$(OBJC) $(OBJCFLAGS_ALL) -c $< -o $@

$(LIBTRANSIT): $(LIB_OBJ) $(RT_PB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(CLIENT_LIB): $(CLIENT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

client: $(CLIENT_LIB)

$(BUILD)/client/%: tests/client/%.c include/transit/client.h $(CLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) $(SAN_FLAGS) -D_DEFAULT_SOURCE -Iinclude $< -o $@ $(LDFLAGS_ALL) $(CLIENT_LIB) $(CLIENT_LIBS)

$(BUILD)/client/%: bench/client/%.c include/transit/client.h $(CLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) $(SAN_FLAGS) -D_DEFAULT_SOURCE -Iinclude $< -o $@ $(LDFLAGS_ALL) $(CLIENT_LIB) $(CLIENT_LIBS)

$(TRANSITD): $(BUILD)/obj/cli/main.o $(OBJC_OBJ) $(LIBTRANSIT)
	$(OBJC) $(LDFLAGS_ALL) -o $@ $(BUILD)/obj/cli/main.o $(OBJC_OBJ) $(LIBTRANSIT) $(OBJC_LIBS) $(LIBS)

# Tests may build GTFS-Realtime fixtures with the generated protobuf-c code.
$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIBTRANSIT) $(RT_PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -Itests/unit -I$(GEN) $< -o $@ $(LDFLAGS_ALL) $(TEST_LDFLAGS_$*) $(LIBTRANSIT) $(CMOCKA_LIBS) $(LIBS) $(TEST_PKG_LIBS)

# The allocation-failure test routes libtransit's allocations through its own
# wrappers (GNU ld / lld --wrap; ld64 has none, and the test then skips).
ifneq ($(UNAME_S),Darwin)
TEST_LDFLAGS_test_alloc_failures := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=aligned_alloc -ldl
endif

$(BUILD)/bench/%: bench/%.c $(LIBTRANSIT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(BENCH_CFLAGS_$*) $< -o $@ $(LDFLAGS_ALL) $(LIBTRANSIT) $(LIBS) $(BENCH_LIBS_$*)

# libcsv is only a benchmark peer: linked into the CSV benchmark, never into transitd.
BENCH_LIBS_bench_csv := -lcsv
# OpenSSL's libcrypto is only the SHA-256 benchmark's peer (transitd hashes with nettle).
BENCH_CFLAGS_bench_hash := $(shell pkg-config --cflags libcrypto 2>/dev/null)
BENCH_LIBS_bench_hash := $(shell pkg-config --libs libcrypto 2>/dev/null)

build-tests: $(TRANSITD) $(UNIT_BIN) $(BENCH_BIN) $(CLIENT_LIB) $(CLIENT_BIN)

# ---------------------------------------------------------------- the two commands

# `make run` serves a release build (assert() off), as a deployment would.
run: deps-run
	@$(MAKE) --no-print-directory RELEASE=1 serve-release

serve-release: $(TRANSITD)
	@bash .ci/make-run "$(TRANSITD)" "$(DATA)" "$(FEED)" "$(PORT)"

test: deps
	@$(MAKE) --no-print-directory build-tests
	@$(PYTHON) tests/run_all.py --build $(BUILD)

unit: build-tests
	@$(PYTHON) tests/run_all.py --build $(BUILD) --only unit

api: build-tests
	@$(PYTHON) tests/run_all.py --build $(BUILD) --only api

# ---------------------------------------------------------------- benchmarks

# Benchmarks measure release builds (build/release, assert() off), the binary a
# deployment runs; `make bench-smoke` (part of `make test`) runs on the test build.
RELEASE_BUILD := build/release
release-build:
	@$(MAKE) --no-print-directory RELEASE=1 build-tests

bench: deps release-build
	@$(PYTHON) bench/run_bench.py --build $(RELEASE_BUILD) --all
	@$(PYTHON) bench/alerts_bench.py --build $(RELEASE_BUILD)
	@$(PYTHON) bench/realtime_bench.py --build $(RELEASE_BUILD)
	@$(PYTHON) bench/compression_bench.py --build $(RELEASE_BUILD)
	@$(PYTHON) bench/tls_bench.py --build $(RELEASE_BUILD)
	@$(PYTHON) bench/replicas_bench.py --build $(RELEASE_BUILD)
	@$(PYTHON) bench/client_bench.py --build $(RELEASE_BUILD)

bench-smoke: build-tests
	@$(PYTHON) bench/run_bench.py --build $(BUILD) --smoke

bench-import: release-build
	@$(PYTHON) bench/run_bench.py --build $(RELEASE_BUILD) --import

bench-query: release-build
	@$(PYTHON) bench/run_bench.py --build $(RELEASE_BUILD) --query

bench-csv: release-build
	@$(PYTHON) bench/run_bench.py --build $(RELEASE_BUILD) --csv

# SHA-256 (the dataset version's hash): transit/sha256.h, nettle and OpenSSL on one buffer;
# the record goes to bench/results/<date>-<host>-hash[-BENCH_TAG].txt
bench-hash: release-build
	@mkdir -p bench/results
	@$(RELEASE_BUILD)/bench/bench_hash 256 7 | \
	    tee bench/results/$$(date +%F)-$$(hostname -s)-hash$(if $(BENCH_TAG),-$(BENCH_TAG)).txt

# Issue #28: `transitd import` of Brooklyn and of SCALE_COPIES copies of it (bench/scale_feed.py,
# a directory; 2.9 GB for 16), medians of 3 alternating rounds with the no-op re-import;
# BASE=DIR (a build folder of another commit) runs it beside this build
SCALE_COPIES ?= 16
SCALE_FEED := build/feeds/brooklyn-x$(SCALE_COPIES)
BASE ?=
bench-import-scale: release-build
	@[ -d $(SCALE_FEED) ] || $(PYTHON) bench/scale_feed.py --copies $(SCALE_COPIES) --out $(SCALE_FEED)
	@$(PYTHON) bench/import_ab.py $(if $(BASE),--build base=$(BASE)) --build this=$(RELEASE_BUILD) \
	    --feed ../shared/gtfs/nyct_bus_brooklyn_2026.zip --feed $(SCALE_FEED) --runs 3

# Brooklyn as written and day by day (one service per trip; bench/daily_calendar.py): import time and stores
bench-calendars: release-build
	@$(PYTHON) bench/calendar_ab.py $(if $(BASE),--build base=$(BASE)) --build this=$(RELEASE_BUILD) --runs 5

# Issue #28, many feeds: Brooklyn and the subway imported alone and together (and with one of
# them changed), and stop departures on the merged dataset against Brooklyn alone
bench-merge: release-build
	@$(PYTHON) bench/merge_bench.py --build $(RELEASE_BUILD)

# Three feeds, one changed, re-imported (what reusing unchanged stores saves), against BASE when given
bench-merge-reuse: release-build
	@$(PYTHON) bench/merge_reuse_ab.py $(if $(BASE),--build base=$(BASE)) --build this=$(RELEASE_BUILD) --runs 7

# National and continental size (issue #28): the generated national feed (bench/national_gen.py) at
# NATIONAL_SIZES Brooklyns against Brooklyn in the same run: import, stores, serving RSS, req/s,
# p99 in process and a hot swap under wrk; curves in bench/results/<date>-<host>-national.png
NATIONAL_SIZES ?= 4,16,64
bench-national: release-build
	@$(PYTHON) bench/national_bench.py --build $(RELEASE_BUILD) --sizes $(NATIONAL_SIZES)

bench-http: release-build
	@$(PYTHON) bench/run_bench.py --build $(RELEASE_BUILD) --http

bench-alerts: release-build
	@$(PYTHON) bench/alerts_bench.py --build $(RELEASE_BUILD)

bench-realtime: release-build
	@$(PYTHON) bench/realtime_bench.py --build $(RELEASE_BUILD)

# a 64 MB TripUpdates feed (200,000 entities, cached in build/feeds/): decode and apply time and peak
# extra memory in process, departures while it is swapped in every second against no swaps;
# BASE=DIR (a build folder of another commit) runs its in-process measure beside this build's
bench-realtime-large: release-build
	@$(PYTHON) bench/realtime_large.py --build $(RELEASE_BUILD) $(if $(BASE),--base $(BASE))

# pushed boards: 5,000 text/event-stream streams on one server, RSS, idle CPU, feed-to-event latency
bench-streams: release-build
	@$(PYTHON) bench/stream_bench.py --build $(RELEASE_BUILD)

# URLSession's Accept-Encoding (gzip, deflate, br) against none, with and without the cache
bench-compression: release-build
	@$(PYTHON) bench/compression_bench.py --build $(RELEASE_BUILD)

# primary and replicas: snapshot transfer against nginx, alert propagation, serving through nginx
bench-replicas: release-build
	@$(PYTHON) bench/replicas_bench.py --build $(RELEASE_BUILD)

# the phone (issue #25): snapshot sizes for every shared feed, update patches, the client
# library's cold start
bench-client: release-build
	@$(PYTHON) bench/client_bench.py --build $(RELEASE_BUILD)

# the iPhone profile (HTTPS keep-alive, URLSession's Accept-Encoding, the mix) against plain
# HTTP, and new TLS connections per second against nginx
bench-tls: release-build
	@$(PYTHON) bench/tls_bench.py --build $(RELEASE_BUILD)

demo-feed:
	@$(PYTHON) bench/gtfs_gen.py --scale demo --out $(BUILD)/feeds/demo.zip

clean:
	rm -rf build

# ---------------------------------------------------------------- install

# `make install [PREFIX=/usr/local] [DESTDIR=]`: the binary, what it serves beside the API
# (the OpenAPI document and the pages, found from the binary as ../share/transitd), and the
# service files with PREFIX's paths: the systemd unit in PREFIX/lib/systemd/system (on
# systemd's search path for /usr and /usr/local), the launchd plists, the HTTPS drop-in for the
# unit and the certificate-renewal hook in PREFIX/share/transitd.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_BIN := $(DESTDIR)$(PREFIX)/bin
INSTALL_SHARE := $(DESTDIR)$(PREFIX)/share/transitd
INSTALL_UNIT := $(DESTDIR)$(PREFIX)/lib/systemd/system

.PHONY: deps-run install uninstall

install: $(TRANSITD)
	install -d $(INSTALL_BIN) $(INSTALL_SHARE)/www $(INSTALL_UNIT)
	install -m 755 $(TRANSITD) $(INSTALL_BIN)/transitd
	install -m 644 docs/openapi.json $(INSTALL_SHARE)/openapi.json
	install -m 644 www/* $(INSTALL_SHARE)/www/
	sed 's|/usr/local|$(PREFIX)|g' etc/transitd.service > $(INSTALL_UNIT)/transitd.service
	sed 's|/usr/local|$(PREFIX)|g' etc/org.transitd.plist > $(INSTALL_SHARE)/org.transitd.plist
	sed 's|/usr/local|$(PREFIX)|g' etc/org.transitd.https.plist > $(INSTALL_SHARE)/org.transitd.https.plist
	sed 's|/usr/local/bin|$(PREFIX)/bin|g' etc/transitd-https.conf > $(INSTALL_SHARE)/transitd-https.conf
	sed 's|/usr/local/bin|$(PREFIX)/bin|g' etc/transitd-replica.conf > $(INSTALL_SHARE)/transitd-replica.conf
	sed 's|/usr/local|$(PREFIX)|g' etc/org.transitd.replica.plist > $(INSTALL_SHARE)/org.transitd.replica.plist
	install -m 755 etc/tls-renewed.sh $(INSTALL_SHARE)/tls-renewed.sh
	chmod 644 $(INSTALL_UNIT)/transitd.service $(INSTALL_SHARE)/org.transitd.plist \
	  $(INSTALL_SHARE)/org.transitd.https.plist $(INSTALL_SHARE)/transitd-https.conf \
	  $(INSTALL_SHARE)/transitd-replica.conf $(INSTALL_SHARE)/org.transitd.replica.plist
ifeq ($(UNAME_S),Darwin)
	install -d $(DESTDIR)$(PREFIX)/var/transitd $(DESTDIR)$(PREFIX)/var/log
endif

uninstall:
	rm -f $(INSTALL_BIN)/transitd $(INSTALL_UNIT)/transitd.service
	rm -rf $(INSTALL_SHARE)

# ---------------------------------------------------------------- fuzzing
#
#   make fuzz FUZZ_S=60   build the libFuzzer targets (tests/fuzz/fuzz_*.c) and
#                         run each for FUZZ_S seconds, one after the other
#   make fuzz FUZZ_RUNS=10000000   each for that many inputs instead (the
#                         long runs, outside CI; FUZZ_TARGETS="csv feed_zip"
#                         picks targets)
#   make fuzz-smoke       the same for 10 s each (for CI)
#   make fuzz-build       only build them, into build/fuzz/
# Seeds: tests/fuzz/seeds/<target>/ (small, committed) and
# build/fuzz/corpus/<target>/ (generated from ../shared/gtfs by
# tests/fuzz/make_corpus.py; new inputs the fuzzer finds are kept there).
# A crash leaves its input in build/fuzz/artifacts/.

FUZZ_S ?= 60
FUZZ_RUNS ?=
# the harnesses that must go through a file write it under TMPDIR: memory
# when the machine has /dev/shm
FUZZ_TMP := $(if $(wildcard /dev/shm),/dev/shm,$(or $(TMPDIR),/tmp))
FUZZ_LIMIT = $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_S))
FUZZ_DIR := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -O1 -g $(WARN) $(FUZZ_SAN) -D_DEFAULT_SOURCE -D_DARWIN_C_SOURCE -Iinclude -Isrc $(PKG_CFLAGS)
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_BINS := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_LIB_OBJ := $(patsubst src/%.c,$(FUZZ_DIR)/obj/%.o,$(LIB_SRC)) $(FUZZ_DIR)/obj/gtfs-realtime.pb-c.o

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-corpus

$(FUZZ_DIR)/obj/%.o: src/%.c $(wildcard include/transit/*.h) $(SRC_HDR) $(RT_PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -I$(GEN) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/obj/gtfs-realtime.pb-c.o: $(RT_PB_C) $(RT_PB_H)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -I$(GEN) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/libtransit.a: $(FUZZ_LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libtransit.a
	$(CC) $(FUZZ_CFLAGS) -I$(GEN) -fsanitize=fuzzer $< -o $@ $(FUZZ_DIR)/libtransit.a $(LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz-corpus: $(TRANSITD)
	@$(PYTHON) tests/fuzz/make_corpus.py --transitd $(TRANSITD) --out $(FUZZ_DIR)/corpus
	@$(PYTHON) tests/fuzz/make_seeds.py $(FUZZ_DIR)/corpus/rt_decode
	@$(PYTHON) tests/fuzz/make_seeds.py $(FUZZ_DIR)/corpus/rt_feed_wire

fuzz: fuzz-build fuzz-corpus
	@mkdir -p $(FUZZ_DIR)/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	    echo "== fuzz_$$t $(if $(FUZZ_RUNS),for $(FUZZ_RUNS) inputs,for $(FUZZ_S) s)"; \
	    mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	    log=$(FUZZ_DIR)/fuzz_$$t.log; \
	    if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TMPDIR=$(FUZZ_TMP) \
	        $(FUZZ_DIR)/fuzz_$$t $(FUZZ_LIMIT) -print_final_stats=1 -timeout=10 \
	        -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- \
	        $(FUZZ_DIR)/corpus/$$t $$( [ -d tests/fuzz/seeds/$$t ] && echo tests/fuzz/seeds/$$t ) \
	        > $$log 2>&1; then tail -60 $$log; echo "fuzz_$$t FAILED (log: $$log)"; exit 1; fi; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' $$log; \
	done

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_S=10
