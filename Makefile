# SPDX-License-Identifier: MIT
# kvgate: the one build file.  make [all|deps|check|bench|fuzz|install|demo|clean]

VERSION  != cat VERSION
PREFIX   ?= /usr/local
MANDIR   ?= $(PREFIX)/share/man
CC       ?= cc
CLANG    ?= clang
BUILD    ?= build
FUZZ_TIME ?= 60
FUZZ_SMOKE ?= 3

CSTD     = -std=c17 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter
CFLAGS   ?= -O2 -g
CPPFLAGS += -Ilib -DKVGATE_VERSION='"$(VERSION)"'
LDLIBS   = -Wl,--as-needed -ljansson -lcurl -lcrypto -libverbs -lrdmacm \
           -lpthread -ldl -lm
SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined

CMDS     := $(sort $(basename $(notdir $(wildcard bin/*.c))))
LIBSRC   := $(sort $(wildcard lib/*.c))
LIBHDR   := $(wildcard lib/*.h)
UNITSRC  := $(sort $(wildcard tests/unit/*.c))
FUZZSRC  := $(sort $(wildcard fuzz/*.c))
MANPAGES := $(wildcard man/*.1 man/*.7)

# Debian packages for building, testing, the demo and the benchmarks.
DEPS_PKGS = gcc make pkg-config clang libclang-rt-14-dev valgrind \
            libjansson-dev libcurl4-openssl-dev libssl-dev openssl \
            libibverbs-dev librdmacm-dev rdma-core ibverbs-utils perftest \
            jq bats bats-assert bats-support mandoc iproute2 procps \
            iperf3 prometheus-node-exporter prometheus wrk hyperfine \
            python3 coreutils time

.PHONY: all deps check build-check unit test lint fuzz fuzz-smoke bench \
        install demo clean

all: $(CMDS:%=$(BUILD)/bin/%)

# --- one object tree per flavour: plain (gcc), asan, clang -------------
define flavour
$(1)/obj/%.o: %.c $(LIBHDR) VERSION
	@mkdir -p $$(@D)
	@echo "  CC      $$@"
	@$(2) $(CSTD) $(WARN) $(3) $(CPPFLAGS) -c -o $$@ $$<

$(1)/lib/libkvgate.a: $(LIBSRC:%.c=$(1)/obj/%.o)
	@mkdir -p $$(@D)
	@rm -f $$@ && ar rcs $$@ $$^

$(1)/bin/%: $(1)/obj/bin/%.o $(1)/lib/libkvgate.a
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$(2) $(3) -o $$@ $$< $(1)/lib/libkvgate.a $(LDLIBS)

$(1)/unit/%: $(1)/obj/tests/unit/%.o $(1)/lib/libkvgate.a
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	@$(2) $(3) -o $$@ $$< $(1)/lib/libkvgate.a $(LDLIBS)
endef

$(eval $(call flavour,$(BUILD),$(CC),$(CFLAGS)))
$(eval $(call flavour,$(BUILD)/asan,$(CC),-O1 -g $(SAN)))
$(eval $(call flavour,$(BUILD)/clang,$(CLANG),$(CFLAGS)))

# keep objects: they are not throwaway intermediates
.SECONDARY:

UNITS = $(notdir $(basename $(UNITSRC)))

deps:
	@sh tools/deps.sh $(DEPS_PKGS)

# Everything make check compiles: gcc plain and sanitized, clang when present.
build-check: all $(UNITS:%=$(BUILD)/unit/%) \
             $(CMDS:%=$(BUILD)/asan/bin/%) $(UNITS:%=$(BUILD)/asan/unit/%)
	@if command -v $(CLANG) >/dev/null; then \
	  $(MAKE) --no-print-directory $(CMDS:%=$(BUILD)/clang/bin/%); \
	else echo "clang not found: skipping the clang build"; fi

unit: build-check
	@sh tests/run-unit.sh $(BUILD)/unit $(BUILD)/asan/unit

lint:
	@for m in $(MANPAGES); do mandoc -Tlint -Wwarning $$m || exit 1; done; \
	 echo "man pages: $(words $(MANPAGES)) linted clean"

test: build-check
	@KVGATE_BIN=$(CURDIR)/$(BUILD)/bin sh tests/run-bats.sh plain
	@KVGATE_BIN=$(CURDIR)/$(BUILD)/asan/bin sh tests/run-bats.sh asan

check: deps
	@$(MAKE) --no-print-directory build-check
	@$(MAKE) --no-print-directory lint unit fuzz-smoke test

# --- fuzzing (clang's libFuzzer) ---------------------------------------
FUZZFLAGS = -g -O1 -fsanitize=fuzzer-no-link,address,undefined
$(BUILD)/fuzz/obj/%.o: %.c $(LIBHDR)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CLANG) $(CSTD) $(WARN) $(FUZZFLAGS) $(CPPFLAGS) -c -o $@ $<

$(BUILD)/fuzz/%: $(BUILD)/fuzz/obj/fuzz/%.o $(LIBSRC:%.c=$(BUILD)/fuzz/obj/%.o)
	@echo "  LD      $@"
	@$(CLANG) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

FUZZERS = $(notdir $(basename $(FUZZSRC)))

fuzz: $(FUZZERS:%=$(BUILD)/fuzz/%)
	@sh tests/run-fuzz.sh $(BUILD)/fuzz $(FUZZ_TIME) $(FUZZERS)

fuzz-smoke: $(FUZZERS:%=$(BUILD)/fuzz/%)
	@sh tests/run-fuzz.sh $(BUILD)/fuzz $(FUZZ_SMOKE) $(FUZZERS)

# --- benchmarks, install, demo -----------------------------------------
bench: deps all
	@for b in bench/*.sh; do echo "== $$b"; KVGATE_BIN=$(CURDIR)/$(BUILD)/bin sh $$b || exit 1; done

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 755 $(CMDS:%=$(BUILD)/bin/%) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(MANDIR)/man7/

demo: deps
	@$(MAKE) --no-print-directory all
	@KVGATE_BIN=$(CURDIR)/$(BUILD)/bin sh pipelines/demo.sh

clean:
	rm -rf $(BUILD)
