# osmosis — a MOSIX-style process-migration cluster in user space.
#
#	make		build every program into bin/
#	make deps	install the Debian packages the build and tests need
#	make check	deps, build, unit tests, lab integration tests
#	make demo	deps, build, a 4-node lab with a workload to watch
#	make asan	the whole of make check under ASan and UBSan
#	make install	PREFIX=/usr/local DESTDIR=
#	make install-slurm	the Slurm plugin and scripts (osmosis-slurm(8))
#	make deb	build/deb/osmosis{,-slurm}_VERSION_amd64.deb (debian/)

PREFIX		?= /usr/local
DESTDIR		?=
SYSCONFDIR	?= /etc
UNITDIR		?= /lib/systemd/system
MANDIR		?= $(PREFIX)/share/man
LIBEXECDIR	?= $(PREFIX)/libexec
# Where the Slurm plugin goes, and Slurm's plugstack.conf.d.
SLURM_PLUGINDIR	?= $(PREFIX)/lib/osmosis
SLURM_CONFDIR	?= $(SYSCONFDIR)/slurm/plugstack.conf.d

BIN		?= bin
OBJ		?= build

# The version lives in one place, lib/osm.h; the man pages get it when
# installed, and make deb checks that debian/changelog says the same.
VERSION		:= $(shell sed -n 's/^.define OSM_VERSION[[:space:]]*"\(.*\)"$$/\1/p' \
		   lib/osm.h)

CC		?= cc
CFLAGS		?= -O2 -g
WARNINGS	 = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wformat=2 \
		   -Wno-unused-parameter -Wno-format-nonliteral
CPPFLAGS	+= -D_GNU_SOURCE -I. -I$(OBJ)
ALL_CFLAGS	 = -std=gnu11 $(WARNINGS) $(CFLAGS) $(SANITIZE) -MMD -MP
LDFLAGS		+= $(SANITIZE)

PROTOC_C	?= protoc-c
PROTOBUF_LIBS	 = -lprotobuf-c
CURSES_LIBS	 = $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw)
CRYPTO_LIBS	 = $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
CHECK_LIBS	 = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)
JSON_LIBS	 = -ljansson
# Intel's ISA-L, for the image's CRC-32C (migrate/crc32c.c): whatever links
# libmigrate links it.
ISAL_LIBS	 = -lisal
WEB_LIBS	 = -lmicrohttpd
SECCOMP_LIBS	 = -lseccomp
SLURM_LIBS	 = -lslurm

# Debian packages for building, testing and the lab.
DEBS		 = build-essential pkg-config libev-dev libprotobuf-c-dev \
		   protobuf-c-compiler libcap-dev libncurses-dev check \
		   libsubunit-dev libseccomp-dev iproute2 procps util-linux \
		   python3 man-db clang libssl-dev libjansson-dev \
		   libmicrohttpd-dev curl chromium libgomp1 libisal-dev slurmctld slurmd \
		   slurm-client munge libslurm-dev \
		   debhelper dpkg-dev rsync lintian systemd-container

# --- sources -------------------------------------------------------------

PROTOS		 = $(wildcard proto/*.proto)
PROTO_C		 = $(PROTOS:%.proto=$(OBJ)/%.pb-c.c)
PROTO_H		 = $(PROTOS:%.proto=$(OBJ)/%.pb-c.h)

LIB_SRCS	 = $(wildcard lib/*.c)
MOSD_SRCS	 = $(filter-out mosd/main.c, $(wildcard mosd/*.c))
MIGRATE_SRCS	 = $(filter-out migrate/moscr%.c, $(wildcard migrate/*.c))
MOSCR_SRCS	 = $(wildcard migrate/moscr*.c)
REMOTE_SRCS	 = $(wildcard libremote/*.c)
AGENT_SRCS	 = $(filter-out agent/guest.c, $(wildcard agent/*.c))
MON_SRCS	 = $(wildcard mon/*.c)
SLURM_TASK_SRCS	 = slurm/task.c slurm/nodes.c

LIBOSM		 = $(OBJ)/libosm.a
LIBMOSD		 = $(OBJ)/libmosd.a
LIBMIGRATE	 = $(OBJ)/libmigrate.a
LIBREMOTE	 = $(OBJ)/libremote.a
LIBAGENT	 = $(OBJ)/libagent.a
LIBMON		 = $(OBJ)/libmon.a

obj		 = $(patsubst %.c,$(OBJ)/%.o,$(1))

# A tool is tools/NAME.c plus any tools/NAME-*.c.
tool_srcs	 = tools/$(1).c $(wildcard tools/$(1)-*.c)

TOOLS		 = mosctl moslab mosgossip-sim mosrun mosps mosmigrate
PROGRAMS	 = $(BIN)/mosd $(BIN)/mosd-guest $(BIN)/mosmon $(TOOLS:%=$(BIN)/%) \
		   $(BIN)/moscr

ALL_SRCS	 = $(LIB_SRCS) $(MOSD_SRCS) mosd/main.c $(MIGRATE_SRCS) \
		   $(MOSCR_SRCS) \
		   $(REMOTE_SRCS) $(AGENT_SRCS) agent/guest.c $(MON_SRCS) \
		   $(SLURM_TASK_SRCS) \
		   $(foreach t,$(TOOLS),$(call tool_srcs,$(t)))
ALL_OBJS	 = $(call obj,$(ALL_SRCS)) $(PROTO_C:.c=.o)

# Check suites, one per module, each linking only that module (and the
# system libraries in check_X_LDLIBS, the suite's other files in
# check_X_OBJS).
UNIT_TESTS	 = check_lib check_mosd check_mon check_migrate check_remote \
		   check_forward check_agent
UNIT_BINS	 = $(UNIT_TESTS:%=$(OBJ)/tests/%)
check_lib_LIBS	 = $(LIBOSM)
check_lib_OBJS	 = $(OBJ)/tests/unit/check_lib-conf.o \
		   $(OBJ)/tests/unit/check_lib-crypto.o \
		   $(OBJ)/tests/unit/check_lib-json.o \
		   $(OBJ)/tests/unit/check_lib-log.o
check_lib_LDLIBS = $(JSON_LIBS) $(CRYPTO_LIBS)
check_mosd_LIBS	 = $(LIBMOSD) $(LIBOSM)
check_mosd_OBJS	 = $(OBJ)/tests/unit/check_mosd-probe.o \
		   $(OBJ)/tests/unit/check_mosd-quota.o \
		   $(OBJ)/tests/unit/check_mosd-privmsg.o \
		   $(OBJ)/tests/unit/check_mosd-guard.o \
		   $(OBJ)/tests/unit/check_mosd-hashes.o \
		   $(OBJ)/tests/unit/check_mosd-probe-thread.o
check_mosd_LDLIBS = $(CRYPTO_LIBS) $(SECCOMP_LIBS) -lcap -lev
check_mon_LIBS	 = $(LIBMON) $(LIBOSM)
check_mon_LDLIBS = $(CURSES_LIBS)
check_migrate_LIBS = $(LIBMIGRATE) $(LIBOSM)
check_migrate_OBJS = $(OBJ)/tests/common/image-build.o \
		     $(OBJ)/tests/unit/check_migrate-track.o \
		     $(OBJ)/tests/unit/check_migrate-post.o
check_migrate_LDLIBS = $(CRYPTO_LIBS) $(ISAL_LIBS)
check_remote_LIBS = $(LIBREMOTE) $(LIBOSM)
check_remote_OBJS = $(OBJ)/tests/unit/check_remote-hostile.o \
		    $(OBJ)/tests/unit/check_remote-fileio.o \
		    $(OBJ)/tests/unit/check_remote-behind.o \
		    $(OBJ)/tests/unit/check_remote-ahead.o \
		    $(OBJ)/tests/unit/check_remote-stream.o \
		    $(OBJ)/tests/unit/check_remote-pipes.o \
		    $(OBJ)/tests/unit/check_remote-rstub.o \
		    $(OBJ)/tests/unit/check_remote-here.o \
		    $(OBJ)/tests/unit/check_remote-statc.o
check_forward_LIBS = $(LIBREMOTE) $(LIBOSM)
check_agent_LIBS = $(LIBAGENT) $(LIBREMOTE) $(LIBMIGRATE) $(LIBOSM)
check_agent_LDLIBS = $(CRYPTO_LIBS) $(ISAL_LIBS)

# zdtm-style test programs for tests/lab/t-zdtm.sh; some also built static.
ZDTM_SRCS	 = $(wildcard tests/zdtm/*.c)
ZDTM_STATIC	 = basic fpu
ZDTM_BINS	 = $(ZDTM_SRCS:tests/zdtm/%.c=$(OBJ)/tests/zdtm/%) \
		   $(ZDTM_STATIC:%=$(OBJ)/tests/zdtm/%-static)

# The forwarding loopback: a harness (guest agent and home in one) and the
# programs it runs, which check_forward drives.
REMOTE_PROGS	 = $(patsubst tests/remote/%.c,%,$(filter-out \
		   tests/remote/loopback.c,$(wildcard tests/remote/*.c)))
REMOTE_TEST_BINS = $(OBJ)/tests/loopback \
		   $(REMOTE_PROGS:%=$(OBJ)/tests/remote/%)

# --- build ---------------------------------------------------------------

all: $(LIBOSM) $(PROGRAMS) slurm

$(OBJ)/proto/%.pb-c.c $(OBJ)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(@D)
	$(PROTOC_C) --c_out=$(OBJ) $<

.SECONDARY:

$(OBJ)/%.o: %.c | $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(OBJ)/proto/%.pb-c.o: $(OBJ)/proto/%.pb-c.c
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Wno-missing-prototypes -c -o $@ $<

$(LIBOSM): $(call obj,$(LIB_SRCS)) $(PROTO_C:.c=.o)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBMOSD): $(call obj,$(MOSD_SRCS)) $(OBJ)/mosd/web-page.o
	rm -f $@ && $(AR) rcs $@ $^

# The web monitor's page, built into mosd as web_page[] (mosd/web-api.c).
$(OBJ)/mosd/web-page.c: mosd/web-page.html
	@mkdir -p $(@D)
	{ echo '/* Made by make from mosd/web-page.html: do not edit. */'; \
	  echo '#include <stddef.h>'; \
	  echo 'extern const char web_page[];'; \
	  echo 'extern const size_t web_page_len;'; \
	  echo 'const char web_page[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; \
	  echo 'const size_t web_page_len = sizeof web_page - 1;'; } > $@

$(OBJ)/mosd/web-page.o: $(OBJ)/mosd/web-page.c
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(LIBMIGRATE): $(call obj,$(MIGRATE_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(BIN)/moscr: $(call obj,$(MOSCR_SRCS)) $(LIBMIGRATE) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(JSON_LIBS) $(PROTOBUF_LIBS) $(CRYPTO_LIBS) \
	    $(ISAL_LIBS)

$(LIBREMOTE): $(call obj,$(REMOTE_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(LIBAGENT): $(call obj,$(AGENT_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(BIN)/mosd: $(call obj,mosd/main.c) $(LIBMOSD) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lev -lcap $(SECCOMP_LIBS) $(WEB_LIBS) \
	    $(JSON_LIBS) $(PROTOBUF_LIBS) $(CRYPTO_LIBS) -lm

# The guest agent mosd starts for every process it takes (agent/guest.c).
$(BIN)/mosd-guest: $(call obj,agent/guest.c) $(LIBAGENT) $(LIBREMOTE) \
    $(LIBMIGRATE) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lev $(PROTOBUF_LIBS) $(CRYPTO_LIBS) \
	    $(ISAL_LIBS)

$(BIN)/mosmon: $(call obj,$(MON_SRCS)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(CURSES_LIBS) $(PROTOBUF_LIBS) -lm

# mon/ without its main(), for check_mon.
$(LIBMON): $(call obj,$(filter-out mon/main.c,$(MON_SRCS)))
	rm -f $@ && $(AR) rcs $@ $^

$(BIN)/mosctl: $(call obj,$(call tool_srcs,mosctl)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(JSON_LIBS) $(PROTOBUF_LIBS)

$(BIN)/mosps: $(call obj,$(call tool_srcs,mosps)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(JSON_LIBS) $(PROTOBUF_LIBS)

$(BIN)/mosmigrate: $(call obj,$(call tool_srcs,mosmigrate)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS)

# mosrun holds its process with the deputy: forwarding and migration.
$(BIN)/mosrun: $(call obj,$(call tool_srcs,mosrun)) $(LIBAGENT) $(LIBREMOTE) \
    $(LIBMIGRATE) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lev $(PROTOBUF_LIBS) $(CRYPTO_LIBS) \
	    $(ISAL_LIBS) -lpthread

$(BIN)/moslab: $(call obj,$(call tool_srcs,moslab)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS)

# The simulator links mosd's own gossip code, its pure core alone
# (mosd/gossip.h): no libev, nothing else of the daemon.
GOSSIP_OBJS	 = $(call obj,mosd/gossip.c)

$(BIN)/mosgossip-sim: $(call obj,$(call tool_srcs,mosgossip-sim)) \
    $(GOSSIP_OBJS) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS)

# --- Slurm (slurm/, osmosis-slurm(8)) ------------------------------------
#
# The SPANK plugin, the task wrapper it runs the tasks under, the scripts
# for Slurm's Prolog, Epilog and HealthCheckProgram and the checkpoints'
# requeue, and a plugstack.conf line for this tree (the lab tests'):
# make install-slurm installs them with the installed paths.

SLURM_DIR	 = $(OBJ)/slurm
SLURM_SCRIPTS	 = requeue prolog epilog healthcheck
SLURM_OUT	 = $(SLURM_DIR)/spank_osmosis.so $(SLURM_DIR)/slurm-task \
		   $(SLURM_SCRIPTS:%=$(SLURM_DIR)/slurm-%) \
		   $(SLURM_DIR)/plugstack.conf
# The installed paths, the plugin's defaults.
SLURM_PATHS	 = -DOSM_SLURM_TASK_PATH='"$(LIBEXECDIR)/osmosis/slurm-task"' \
		   -DOSM_SLURM_MOSRUN_PATH='"$(PREFIX)/bin/mosrun"' \
		   -DOSM_SLURM_REQUEUE_PATH='"$(LIBEXECDIR)/osmosis/slurm-requeue"'
# slurm_sed BINDIR LIBEXECDIR PLUGINDIR: a script or plugstack.conf for them.
slurm_sed	 = sed 's|@BINDIR@|$(1)|g; s|@LIBEXECDIR@|$(2)|g; s|@PLUGINDIR@|$(3)|g'

slurm: $(SLURM_OUT)

# Loaded into Slurm's own programs: position-independent, no sanitizer
# (they are not built with one), nothing of ours linked in.
$(SLURM_DIR)/spank_osmosis.so: slurm/spank.c slurm/osmosis-slurm.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SLURM_PATHS) -std=gnu11 $(WARNINGS) $(CFLAGS) \
	    $(filter-out $(SANITIZE),$(LDFLAGS)) -fPIC -shared -o $@ $<

$(OBJ)/slurm/task.o: CPPFLAGS += $(SLURM_PATHS)

$(SLURM_DIR)/slurm-task: $(call obj,$(SLURM_TASK_SRCS)) $(LIBOSM)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(SLURM_LIBS) $(PROTOBUF_LIBS)

$(SLURM_DIR)/slurm-%: slurm/%.sh
	@mkdir -p $(@D)
	$(call slurm_sed,$(abspath $(BIN)),$(abspath $(SLURM_DIR)),$(abspath $(SLURM_DIR))) $< > $@
	chmod 755 $@

$(SLURM_DIR)/plugstack.conf: slurm/plugstack.conf.in
	@mkdir -p $(@D)
	$(call slurm_sed,$(abspath $(BIN)),$(abspath $(SLURM_DIR)),$(abspath $(SLURM_DIR))) $< > $@

$(OBJ)/tests/zdtm/%-static: tests/zdtm/%.c tests/zdtm/zdtm.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -static -o $@ $< -pthread

$(OBJ)/tests/zdtm/%: tests/zdtm/%.c tests/zdtm/zdtm.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -o $@ $< -pthread

# An OpenMP reduction (libgomp's threads) for t-zdtm.sh.
$(OBJ)/tests/zdtm/omp: tests/zdtm/omp.c tests/zdtm/zdtm.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -fopenmp -o $@ $<

# Restores into a process it already holds, through libmigrate.
$(OBJ)/tests/zdtm/adopt: $(call obj,tests/migrate/adopt.c) $(LIBMIGRATE) \
    $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) $(CRYPTO_LIBS) $(ISAL_LIBS)

# Programs that lab tests run under mosrun (tests/lab/t-mosrun*.sh).
MOSRUN_PROGS	 = $(OBJ)/tests/mosrun/walker $(OBJ)/tests/mosrun/walker-static \
		   $(OBJ)/tests/mosrun/counter $(OBJ)/tests/mosrun/mapper \
		   $(OBJ)/tests/mosrun/livewriter \
		   $(OBJ)/tests/mosrun/ident $(OBJ)/tests/mosrun/clock \
		   $(OBJ)/tests/mosrun/files $(OBJ)/tests/mosrun/grow \
		   $(OBJ)/tests/mosrun/threads $(OBJ)/tests/mosrun/sigrt \
		   $(OBJ)/tests/mosrun/pipew $(OBJ)/tests/mosrun/reader \
		   $(OBJ)/tests/mosrun/writer

# Threads, OpenMP's among them (tests/lab/t-threads.sh).
$(OBJ)/tests/mosrun/threads: tests/mosrun/threads.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -fopenmp -pthread \
	    -o $@ $<

$(OBJ)/tests/mosrun/%-static: tests/mosrun/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -static -o $@ $<

$(OBJ)/tests/mosrun/%: tests/mosrun/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -o $@ $<

testprogs: $(ZDTM_BINS) $(OBJ)/tests/zdtm/adopt $(MOSRUN_PROGS)

# Benchmarks: never part of make check (bench/checkpoint and bench/forward
# run them).
bench: $(OBJ)/bench/checkpoint $(OBJ)/bench/forward $(OBJ)/bench/mosix \
    $(OBJ)/bench/tcprtt $(OBJ)/bench/session $(OBJ)/bench/stream-steps \
    $(OBJ)/bench/fwdthreads $(OBJ)/bench/memthreads $(OBJ)/bench/ompwork

# A process of T threads and M MiB (bench/thmove); OpenMP work (bench/omp).
$(OBJ)/bench/memthreads: bench/memthreads.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -pthread -o $@ $<

$(OBJ)/bench/ompwork: bench/ompwork.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -fopenmp -o $@ $<

# Forwarded calls of several threads at once (bench/threads).
$(OBJ)/bench/fwdthreads: bench/fwdthreads.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -pthread -o $@ $<

# Programs the lab benchmarks run inside nodes.
$(OBJ)/bench/mosix $(OBJ)/bench/tcprtt: $(OBJ)/bench/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARNINGS) -O2 -g -o $@ $<

$(OBJ)/bench/checkpoint: $(call obj,bench/checkpoint.c) $(LIBMIGRATE) $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) $(CRYPTO_LIBS) $(ISAL_LIBS) \
	    -lpthread

# Each step of a move's stream alone (CRC, cipher, copies, fresh pages).
$(OBJ)/bench/stream-steps: $(call obj,bench/stream-steps.c) $(LIBMIGRATE) \
    $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) $(CRYPTO_LIBS) $(ISAL_LIBS) \
	    -lpthread

# What a session costs a message, without the network.
$(OBJ)/bench/session: $(call obj,bench/session.c) $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) $(CRYPTO_LIBS)

$(OBJ)/bench/forward: $(call obj,bench/forward.c) $(LIBREMOTE) $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS)

.SECONDEXPANSION:
$(OBJ)/tests/%: $(OBJ)/tests/unit/%.o $$($$*_OBJS) $$($$*_LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $($*_OBJS) $($*_LIBS) $($*_LDLIBS) \
	    $(PROTOBUF_LIBS) $(CHECK_LIBS) -lm

$(OBJ)/tests/loopback: $(OBJ)/tests/remote/loopback.o $(LIBREMOTE) \
    $(LIBMIGRATE) $(LIBOSM)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) $(ISAL_LIBS)

$(OBJ)/tests/remote/loopback.o: tests/remote/loopback.c | $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# The programs run under the filter from their first instruction: static,
# since a dynamic loader's file mappings would bring them home, and
# without sanitizers, which do not link statically.
$(OBJ)/tests/remote/%: tests/remote/%.c
	@mkdir -p $(@D)
	$(CC) -D_GNU_SOURCE -std=gnu11 $(WARNINGS) $(CFLAGS) -MMD -MP -static \
	    -o $@ $<

-include $(ALL_OBJS:.o=.d) $(UNIT_BINS:$(OBJ)/tests/%=$(OBJ)/tests/unit/%.d) \
    $(foreach t,$(UNIT_TESTS),$($(t)_OBJS:.o=.d)) \
    $(REMOTE_TEST_BINS:%=%.d) $(OBJ)/tests/remote/loopback.d \
    $(OBJ)/bench/forward.d

# --- fuzzing -------------------------------------------------------------
#
# libFuzzer targets for every decoder of untrusted input (tests/fuzz/),
# built with clang, ASan and UBSan from their own objects of the sources
# they drive, into $(FUZZ_OBJ). make fuzz builds them and runs each for
# FUZZ_TIME seconds, FUZZ_JOBS at a time; bench/fuzz runs them for long.
# make fuzz-seeds rewrites the seed corpora in tests/fuzz/corpus/, keeping
# the inputs libFuzzer found and named by their SHA-1 (40 hex digits).

FUZZ_CC		?= clang
FUZZ_OBJ	 = $(OBJ)/fuzz
FUZZ_SANITIZE	 = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS	 = -std=gnu11 $(WARNINGS) -O1 -g -fno-omit-frame-pointer \
		   $(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link -MMD -MP
FUZZ_TIME	?= 6
FUZZ_JOBS	?= 2

FUZZ_TARGETS	 = frame gossip broker session control ctl home guest image \
		   conf policy priv
FUZZ_BINS	 = $(FUZZ_TARGETS:%=$(FUZZ_OBJ)/%)
# The harnesses that include mosd's broker.c, control.c and parent.c keep
# the daemon from starting guest agents or reaching real sockets.
fuzz_broker_LDFLAGS = -Wl,--wrap=privsep_ask -Wl,--wrap=privsep_cancel
fuzz_control_LDFLAGS = -Wl,--wrap=connect
# The privileged parent's decoder, which would start guest agents.
fuzz_priv_LDFLAGS = -Wl,--wrap=guests_spawn -Wl,--wrap=guests_spare
# The image target's seeds are check_migrate's image, with more in it.
fuzz_image_OBJS	 = $(FUZZ_OBJ)/tests/common/image-build.o

fuzz_obj	 = $(patsubst %.c,$(FUZZ_OBJ)/%.o,$(1))
FUZZ_PROTO_OBJS	 = $(PROTO_C:$(OBJ)/%.c=$(FUZZ_OBJ)/%.o)
FUZZ_LIBOSM_OBJS = $(call fuzz_obj,$(LIB_SRCS)) $(FUZZ_PROTO_OBJS)
FUZZ_LIBS	 = $(FUZZ_OBJ)/libmosd.a $(FUZZ_OBJ)/libremote.a \
		   $(FUZZ_OBJ)/libmigrate.a $(FUZZ_OBJ)/libosm.a
FUZZ_LDLIBS	 = -lev -lcap $(JSON_LIBS) $(PROTOBUF_LIBS) $(CRYPTO_LIBS) -lm \
		   $(ISAL_LIBS) -lpthread
# A target links FUZZ_LIBS and FUZZ_LDLIBS unless it says less: the gossip
# target drives the pure gossip core, which needs only lib/ and protobuf-c.
fuzz_gossip_LIBS = $(call fuzz_obj,mosd/gossip.c) $(FUZZ_OBJ)/libosm.a
fuzz_gossip_LDLIBS = $(PROTOBUF_LIBS) $(CRYPTO_LIBS)
fuzz_libs	 = $(or $(fuzz_$(1)_LIBS),$(FUZZ_LIBS))
fuzz_ldlibs	 = $(or $(fuzz_$(1)_LDLIBS),$(FUZZ_LDLIBS))
FUZZ_OBJS	 = $(FUZZ_LIBOSM_OBJS) $(call fuzz_obj,$(MOSD_SRCS) \
		   $(REMOTE_SRCS) $(MIGRATE_SRCS) tests/fuzz/fuzz.c \
		   $(FUZZ_TARGETS:%=tests/fuzz/%.c)) $(fuzz_image_OBJS)

$(FUZZ_OBJ)/%.o: %.c | $(PROTO_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_OBJ)/proto/%.pb-c.o: $(OBJ)/proto/%.pb-c.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -Wno-missing-prototypes -c \
	    -o $@ $<

$(FUZZ_OBJ)/libosm.a: $(FUZZ_LIBOSM_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_OBJ)/libmosd.a: $(call fuzz_obj,$(MOSD_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_OBJ)/libremote.a: $(call fuzz_obj,$(REMOTE_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_OBJ)/libmigrate.a: $(call fuzz_obj,$(MIGRATE_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_BINS): $(FUZZ_OBJ)/%: $(FUZZ_OBJ)/tests/fuzz/%.o \
    $(FUZZ_OBJ)/tests/fuzz/fuzz.o $$(fuzz_$$*_OBJS) $$(call fuzz_libs,$$*)
	$(FUZZ_CC) $(FUZZ_SANITIZE) -fsanitize=fuzzer $(fuzz_$*_LDFLAGS) \
	    -o $@ $< $(fuzz_$*_OBJS) $(FUZZ_OBJ)/tests/fuzz/fuzz.o \
	    -Wl,--start-group $(call fuzz_libs,$*) -Wl,--end-group \
	    $(call fuzz_ldlibs,$*)

fuzz: $(FUZZ_BINS)
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run \
	    $(FUZZ_BINS)

fuzz-build: $(FUZZ_BINS)

fuzz-list:
	@echo $(FUZZ_TARGETS)

fuzz-seeds: $(FUZZ_BINS)
	for t in $(FUZZ_TARGETS); do \
	    mkdir -p tests/fuzz/corpus/$$t; \
	    find tests/fuzz/corpus/$$t -regextype posix-basic -type f \
	        ! -regex '.*/[0-9a-f]\{40\}' -delete; \
	    OSM_FUZZ_SEEDS=tests/fuzz/corpus/$$t $(FUZZ_OBJ)/$$t || exit 1; \
	done

-include $(FUZZ_OBJS:.o=.d)

.PHONY: fuzz fuzz-build fuzz-list fuzz-seeds

# --- end of fuzzing ------------------------------------------------------

# --- set-up, tests, demo -------------------------------------------------

deps:
	@missing=$$(for p in $(DEBS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	    grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" != 0 ]; then \
	        echo "make deps: missing packages:" $$missing; \
	        echo "make deps: run as root to install them"; exit 1; \
	    fi; \
	    echo "make deps: installing" $$missing; \
	    apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	        --no-install-recommends $$missing; \
	fi

units: $(UNIT_BINS) $(REMOTE_TEST_BINS)

check: deps
	$(MAKE) all units testprogs
	tests/layers $(OBJ)
	tests/run-unit $(UNIT_BINS)
	$(MAKE) fuzz
	DEB_BUILD_OPTIONS=nocheck $(MAKE) deb
	OSM_BIN=$(abspath $(BIN)) OSM_ZDTM=$(abspath $(OBJ)/tests/zdtm) \
	    OSM_MOSRUN=$(abspath $(OBJ)/tests/mosrun) \
	    OSM_SLURM=$(abspath $(SLURM_DIR)) OSM_DEB=$(abspath $(DEB)) \
	    OSM_DEB_SLURM=$(abspath $(DEB_SLURM)) tests/lab/run

asan: deps
	$(MAKE) OBJ=build/asan BIN=build/asan/bin CFLAGS="-O1 -g" \
	    SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    all units testprogs
	tests/run-unit $(UNIT_BINS:$(OBJ)/%=build/asan/%)
	OSM_BIN=$(abspath build/asan/bin) \
	    OSM_ZDTM=$(abspath build/asan/tests/zdtm) \
	    OSM_MOSRUN=$(abspath build/asan/tests/mosrun) \
	    OSM_SLURM=$(abspath build/asan/slurm) \
	    OSM_SAN_DIR=$(abspath build/asan/reports) tests/lab/run

demo: deps
	$(MAKE) all $(OBJ)/bench/mosix
	OSM_BIN=$(abspath $(BIN)) OSM_DEMO_JOB=$(abspath $(OBJ)/bench/mosix) \
	    tests/lab/demo.sh

# --- install -------------------------------------------------------------
#
# make install puts every program, the man pages (stamped with VERSION),
# the sample configuration (never over an existing file) and the systemd
# unit under DESTDIR. mosd-guest goes beside mosd: mosd runs the one in
# its own directory (mosd/guests.c). A cluster key is made only for an
# install onto this machine (no DESTDIR): a staged install is a package,
# which must not carry one (debian/osmosis.postinst makes it on the node).

# osmosis-slurm(8) goes with the Slurm plugin (install-slurm).
MANPAGES	 = $(filter-out docs/man/osmosis-slurm.8,$(wildcard docs/man/*.[158]))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin
	install -m 755 $(BIN)/mosd $(BIN)/mosd-guest $(DESTDIR)$(PREFIX)/sbin/
	install -m 755 $(filter-out $(BIN)/mosd $(BIN)/mosd-guest,$(PROGRAMS)) \
	    $(DESTDIR)$(PREFIX)/bin/
	for m in $(MANPAGES); do \
	    s=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s && \
	    sed '1s/"osmosis[^"]*"/"osmosis $(VERSION)"/' $$m \
	        > $(DESTDIR)$(MANDIR)/man$$s/$${m##*/} && \
	    chmod 644 $(DESTDIR)$(MANDIR)/man$$s/$${m##*/} || exit 1; done
	install -d $(DESTDIR)$(SYSCONFDIR)/osmosis
	for f in cluster.conf policy.conf; do \
	    [ -e $(DESTDIR)$(SYSCONFDIR)/osmosis/$$f ] || \
	    install -m 644 etc/$$f $(DESTDIR)$(SYSCONFDIR)/osmosis/$$f; done
	if [ -z "$(DESTDIR)" ] && \
	    [ ! -e $(SYSCONFDIR)/osmosis/cluster.key ]; then \
	    $(BIN)/mosd -K $(SYSCONFDIR)/osmosis/cluster.key; fi
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    etc/mosd.service > $(DESTDIR)$(UNITDIR)/mosd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/mosd.service

# The Slurm plugin, its task wrapper and scripts, and the plugstack.conf
# line that loads it (osmosis-slurm(8)).
install-slurm: slurm
	install -d $(DESTDIR)$(SLURM_PLUGINDIR) \
	    $(DESTDIR)$(LIBEXECDIR)/osmosis $(DESTDIR)$(SLURM_CONFDIR)
	install -m 644 $(SLURM_DIR)/spank_osmosis.so $(DESTDIR)$(SLURM_PLUGINDIR)/
	install -m 755 $(SLURM_DIR)/slurm-task $(DESTDIR)$(LIBEXECDIR)/osmosis/
	for s in $(SLURM_SCRIPTS); do \
	    $(call slurm_sed,$(PREFIX)/bin,$(LIBEXECDIR)/osmosis,$(SLURM_PLUGINDIR)) \
	        slurm/$$s.sh > $(DESTDIR)$(LIBEXECDIR)/osmosis/slurm-$$s && \
	    chmod 755 $(DESTDIR)$(LIBEXECDIR)/osmosis/slurm-$$s || exit 1; done
	$(call slurm_sed,$(PREFIX)/bin,$(LIBEXECDIR)/osmosis,$(SLURM_PLUGINDIR)) \
	    slurm/plugstack.conf.in > $(DESTDIR)$(SLURM_CONFDIR)/osmosis.conf
	chmod 644 $(DESTDIR)$(SLURM_CONFDIR)/osmosis.conf
	install -d $(DESTDIR)$(MANDIR)/man8
	sed '1s/"osmosis[^"]*"/"osmosis $(VERSION)"/' docs/man/osmosis-slurm.8 \
	    > $(DESTDIR)$(MANDIR)/man8/osmosis-slurm.8
	chmod 644 $(DESTDIR)$(MANDIR)/man8/osmosis-slurm.8

# --- the Debian package --------------------------------------------------
#
# make deb builds $(DEB) and $(DEB_SLURM) (the Slurm plugin)
# with dpkg-buildpackage from debian/, offline and unsigned, in a copy of
# this tree in $(DEB_DIR)/src (the .debs land beside it): the package's
# build cleans and compiles with Debian's flags, which must not touch
# this tree's build/ and bin/. The copy is kept with its objects, so that
# the next make deb compiles only what changed. DEB_BUILD_OPTIONS=nocheck
# skips the unit suites the package build runs (make check has just run
# them).

DEB_DIR		?= build/deb
DEB		 = $(DEB_DIR)/osmosis_$(VERSION)_amd64.deb
DEB_SLURM	 = $(DEB_DIR)/osmosis-slurm_$(VERSION)_amd64.deb

deb:
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version) || exit 1; \
	if [ "$$v" != "$(VERSION)" ]; then \
	    echo "make deb: debian/changelog's newest entry is $$v but" \
	        "lib/osm.h says $(VERSION): add an entry" \
	        "(dch -v $(VERSION))" >&2; exit 1; fi
	mkdir -p $(DEB_DIR)/src
	rsync -a --delete --filter=':- .gitignore' --exclude=/.git \
	    ./ $(DEB_DIR)/src/
	cd $(DEB_DIR)/src && dh_clean && \
	    dpkg-buildpackage -us -uc -b -nc -J$$(nproc)
	@echo "make deb: $(DEB) $(DEB_SLURM)"

clean:
	rm -rf $(OBJ) $(BIN)

.PHONY: all deps units testprogs bench check asan demo install install-slurm \
	slurm deb clean
