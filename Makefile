# ember: build, guest artifacts, tests.  See README.md.
CC	?= gcc
BUILD	:= build
GUEST	:= $(BUILD)/guest

WARN	:= -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wvla -Wimplicit-fallthrough
HARDEN	:= -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS	:= -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARN) $(HARDEN) -MMD -MP
LDFLAGS	:= -pie -Wl,-z,relro,-z,now,-z,noexecstack
LDLIBS	:= -lpthread
# HTTP for the control socket, JSON for it, --config-file and metrics.
# zlib: the snapshot files' CRC and compressed memory files.
# libseccomp: each thread's allow-list (vmm/seccomp/seccomp.h).
VMM_LIBS := -lmicrohttpd -ljansson -lz -lseccomp
SAN	:= -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=all
# Test builds: no _FORTIFY_SOURCE (ASan replaces it), -O1 for usable traces;
# EMBER_TEST_HOOKS: hooks the tests drive (EMBER_TEST_SECCOMP_VIOLATE), never
# in the release binary.
TCFLAGS	:= -std=gnu11 -O1 -g -D_GNU_SOURCE $(WARN) -fPIE -MMD -MP $(SAN) \
	   -DEMBER_TEST_HOOKS

# Everything but ember's main (api/server/main.c, at the top) is a library
# the unit tests link against; the control socket's server (api/server/)
# is part of ember.  ember-jailer (api/jailer/) is a program of its own.
EMBER_MAIN := api/server/main.c
# vmm/pvm/detect.c: ember's own PVM host test (the jailer adds --pvm on).
JAILER_SRCS := $(wildcard api/jailer/*.c) vmm/pvm/detect.c
LIB_SRCS := $(filter-out $(EMBER_MAIN),$(wildcard vmm/*.c vmm/*/*.c devices/*.c boot/*.c \
	snapshot/*.c api/server/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
ASAN_LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/asan/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/test/%)

.PHONY: all ember guest deps run test unit asan integration check-asan bench lint \
	fuzz fuzz-build guests clean bench-blk

all: $(BUILD)/ember

ember: $(BUILD)/ember

$(BUILD)/ember: $(LIB_OBJS) $(EMBER_MAIN:%.c=$(BUILD)/obj/%.o)
	$(CC) $(LDFLAGS) -o $@ $^ $(VMM_LIBS) $(LDLIBS)

# ASan/UBSan build of the VMM itself, used by the integration tests.
$(BUILD)/ember-asan: $(ASAN_LIB_OBJS) $(EMBER_MAIN:%.c=$(BUILD)/asan/%.o)
	$(CC) $(SAN) -pie -o $@ $^ $(VMM_LIBS) $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -c -o $@ $<

$(BUILD)/test/%: tests/unit/%.c $(ASAN_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $< $(ASAN_LIB_OBJS) -lcmocka $(VMM_LIBS) $(LDLIBS)

# The guest agent's sources, for the guest (musl) and for the host.
AGENT_SRCS := guest-init/agent.c guest-init/agent_serve.c guest-init/agent_conn.c \
		guest-init/agent_exec.c guest-init/agent_files.c guest-init/agent_init.c \
		guest-init/agent_ctr.c guest-init/agent_fwd.c guest-init/fd_splice.c
AGENT_HDRS := guest-init/agent_serve.h guest-init/agent_conn.h guest-init/agent_exec.h \
		guest-init/agent_files.h guest-init/agent_init.h guest-init/agent_ctr.h \
		guest-init/agent_fwd.h guest-init/fd_splice.h \
		guest-init/protocol.h
# Kept processes (issue 24, item 4: ATTACH, LIST).
AGENT_SRCS += guest-init/agent_keep.c
AGENT_HDRS += guest-init/agent_keep.h

# The guest agent built for this host (glibc, sanitizers), driven over a
# socketpair by test_agent_protocol, which finds it as build/test/agent-host.
$(BUILD)/test/agent-host: $(AGENT_SRCS) $(AGENT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(AGENT_SRCS)

$(BUILD)/test/test_agent_protocol: $(BUILD)/test/agent-host

# --- guest artifacts ------------------------------------------------------
GUEST_CC     := musl-gcc
GUEST_CFLAGS := -std=gnu11 -O2 -static -s -Wall -Wextra -Werror

guest: $(GUEST)/vmlinux $(GUEST)/bzImage $(GUEST)/initramfs.cpio $(GUEST)/rootfs.ext4 \
	$(GUEST)/interp/ember-interp

$(GUEST)/vmlinux $(GUEST)/bzImage $(GUEST)/gen_init_cpio &: guest-init/kernel.config \
		guest-init/build-kernel.sh $(wildcard guest-init/patches/*.patch)
	guest-init/build-kernel.sh $(GUEST)

$(GUEST)/init: guest-init/init.c guest-init/protocol.h
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -o $@ guest-init/init.c

# The code interpreter's files, for templates from the user's images
# (emberctl's guest/interp; the rootfs has its own copy).
$(GUEST)/interp/ember-interp: $(wildcard guest-init/interp/*)
	@mkdir -p $(dir $@)
	cp guest-init/interp/* $(dir $@)

$(GUEST)/agent: $(AGENT_SRCS) $(AGENT_HDRS)
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -o $@ $(AGENT_SRCS)

$(GUEST)/vecstate: tests/guest-progs/vecstate.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -o $@ $<

$(GUEST)/initramfs.cpio: $(GUEST)/init $(GUEST)/agent $(GUEST)/vecstate \
		$(GUEST)/gen_init_cpio guest-init/mk-initramfs.sh guest-init/mk-inputs.sh
	guest-init/mk-initramfs.sh $(GUEST)

$(GUEST)/rootfs.ext4: $(GUEST)/init $(GUEST)/agent $(GUEST)/vecstate guest-init/mk-rootfs.sh \
		guest-init/mk-inputs.sh $(wildcard guest-init/interp/*)
	guest-init/mk-rootfs.sh $(GUEST)

# --- tiny freestanding test guests (tests/guests/) -----------------------
# Each tests/guests/X.c becomes $(BUILD)/guests/X.elf: start.S + X.c at
# 16 MiB, booted with `ember --kernel`.  All, fpu.c included, are built
# with -mgeneral-regs-only: vector registers appear in inline asm only
# (xmm clobbers are still allowed), and compiler-generated SSE would run
# before the guest enables it and through the PVM emulator.
GUEST_TESTS := $(patsubst tests/guests/%.c,$(BUILD)/guests/%.elf,$(wildcard tests/guests/*.c))
GUESTS_CFLAGS := -std=gnu11 -O2 -ffreestanding -fno-pic -fno-pie -no-pie \
	-nostdlib -static -mno-red-zone -fno-stack-protector \
	-fcf-protection=none -mgeneral-regs-only -Wall -Wextra -Werror \
	-T tests/guests/guest.ld -Wl,--build-id=none

guests: $(GUEST_TESTS)

$(BUILD)/guests/%.elf: tests/guests/start.S tests/guests/%.c $(wildcard tests/guests/*.h) \
		tests/guests/guest.ld
	@mkdir -p $(dir $@)
	$(CC) $(GUESTS_CFLAGS) -o $@ tests/guests/start.S tests/guests/$*.c

# --- set-up, run, tests ---------------------------------------------------
deps:
	@tests/install-deps.sh

# The main job (tests/main_job.sh): the default template, a sandbox
# restored from it, `uname -a` in it, then nothing left of the sandbox.
# Where /dev/kvm is missing or unusable it runs in the KVM box
# (tests/kvmbox/kvmbox; EMBER_KVMBOX=1 forces the box, 0 forbids it).
run: deps
	$(MAKE) -j$$(nproc) all guest
	@tests/kvmbox/kvmbox --auto -- env BUILD=$(BUILD) tests/main_job.sh

unit: $(UNIT_BINS)
asan: unit $(BUILD)/ember-asan

# The sanitizer builds, run without a Linux guest: unit tests and the tiny
# guests (milliseconds each).
check-asan: asan guests
	@fail=0; for t in $(UNIT_BINS); do $$t >/dev/null 2>&1 || \
		{ echo "FAIL $$t"; fail=1; }; done; \
	tests/kvmbox/kvmbox --auto -- bash tests/integration/tiny_guests.sh | tee /dev/stderr | \
		grep -q '^not ok' && fail=1; exit $$fail

test: deps
	$(MAKE) -j$$(nproc) all asan fuzz-build guest guests
	tests/run.sh

# --- fuzzing (libFuzzer, clang) -------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

# What a fuzz target links: the pure floors (boot/, snapshot/, the device
# models and their ground), and of vmm/ guest RAM's set-up, the drive
# backings, and the PVM decoder and page walker.
FUZZ_LIB_SRCS := $(filter boot/% snapshot/% devices/guest_mem.c \
	devices/virtq.c devices/virtio_mmio.c devices/virtio_blk.c \
	devices/rate_limiter.c devices/virtio_vsock.c devices/vsock_conns.c \
	devices/virtio_net.c \
	vmm/mem.c vmm/dev/blk_backing.c vmm/pvm/x86_decode.c vmm/pvm/gva.c \
	vmm/pvm/xstate.c, $(LIB_SRCS))

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(wildcard tests/fuzz/*.h)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LIB_SRCS) -lz

# The control socket's routes into the control layer: most of the VMM.
$(BUILD)/fuzz/fuzz_api: tests/fuzz/fuzz_api.c $(LIB_SRCS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRCS) $(VMM_LIBS) -lpthread

$(BUILD)/fuzz/fuzz_agent_protocol: guest-init/protocol.h

# emberctl's agent client: api/ is not in LIB_SRCS.
AGENT_CLIENT_SRCS := api/sandbox/agent_client.c api/sandbox/agent_wire.c \
		api/sandbox/agent_exec.c api/sandbox/agent_files.c
$(BUILD)/fuzz/fuzz_agent_client: tests/fuzz/fuzz_agent_client.c $(AGENT_CLIENT_SRCS) \
		api/sandbox/clock.c api/sandbox/files.c api/sandbox/agent_client.h \
		api/sandbox/agent_wire.h guest-init/protocol.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(AGENT_CLIENT_SRCS) api/sandbox/clock.c api/sandbox/files.c

$(BUILD)/fuzz/fuzz_interp_client: tests/fuzz/fuzz_interp_client.c api/sandbox/interp_client.c \
		$(AGENT_CLIENT_SRCS) api/sandbox/clock.c api/sandbox/files.c \
		api/sandbox/interp_client.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< api/sandbox/interp_client.c $(AGENT_CLIENT_SRCS) \
		api/sandbox/clock.c api/sandbox/files.c -ljansson
# The image code's parsers (api/ is not in LIB_SRCS; IMAGE_SRCS is
# defined below, hence the names here).
FUZZ_IMAGE_SRCS := api/sandbox/image_src.c api/sandbox/image_oci.c \
		api/sandbox/image_tar.c api/sandbox/image_unpack.c api/sandbox/image_disk.c \
		api/sandbox/image_guest.c api/sandbox/image_tool.c api/sandbox/files.c \
		api/sandbox/clock.c
$(BUILD)/fuzz/fuzz_image: tests/fuzz/fuzz_image.c $(FUZZ_IMAGE_SRCS) \
		api/sandbox/image.h api/sandbox/image_internal.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_IMAGE_SRCS) -ljansson -lcrypto -lz
# The Dockerfile parser and its keys (the files digest reads files: not fuzzed).
$(BUILD)/fuzz/fuzz_dockerfile: tests/fuzz/fuzz_dockerfile.c api/sandbox/dockerfile.c \
		api/sandbox/dockerignore.c api/sandbox/image_src.c api/sandbox/files.c \
		api/sandbox/dockerfile.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< api/sandbox/dockerfile.c api/sandbox/dockerignore.c \
		api/sandbox/image_src.c api/sandbox/files.c -ljansson -lcrypto
# .dockerignore patterns: the parser and the matchers.
$(BUILD)/fuzz/fuzz_dockerignore: tests/fuzz/fuzz_dockerignore.c api/sandbox/dockerignore.c \
		api/sandbox/files.c api/sandbox/dockerignore.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< api/sandbox/dockerignore.c api/sandbox/files.c
fuzz-build: $(FUZZ_TARGETS)

# Each target runs FUZZ_SECONDS on a corpus kept in build/fuzz/corpus-*.
fuzz: fuzz-build
	@for f in $(FUZZ_TARGETS); do \
		mkdir -p $$f.corpus; \
		echo "fuzz: $$f for $(FUZZ_SECONDS) s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$f.corpus \
			2>$$f.log || { tail -40 $$f.log; exit 1; }; \
		grep -E 'stat::number_of_executed_units' $$f.log; \
	done

# Each bench script runs itself where /dev/kvm works, else in the KVM box
# (bench/kvmbox.sh; EMBER_KVMBOX=1 forces the box, 0 forbids it), where
# absolute times are not hardware figures.
bench: all guest guests
	bench/boot

bench-blk: all guest
	bench/blk

lint:
	clang-format --dry-run --Werror $(wildcard */*.c */*.h */*/*.c */*/*.h)
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--inline-suppr -I. vmm devices boot snapshot api

clean:
	rm -rf $(BUILD)

# --- emberctl (api/): the sandbox client -----------------------------------
# Its own objects, and of the VMM only the configuration's limits
# (vmm/config.c), so that both check them alike, and the overlay format
# (snapshot/overlay.c).  emberctl-asan is the
# sanitizer build the tests drive; test_agent_client links the client alone
# (not $(ASAN_LIB_OBJS)) and runs build/test/agent-host behind a fake
# sandbox socket.
SANDBOX_SRCS := api/sandbox/sandbox.c api/sandbox/lookup.c api/sandbox/record.c api/sandbox/supervisor.c \
		api/sandbox/files.c api/sandbox/proc.c api/sandbox/clock.c \
		$(AGENT_CLIENT_SRCS) api/sandbox/pause.c \
		api/sandbox/ember_api.c api/sandbox/template.c api/sandbox/template_build.c api/sandbox/template_save.c \
		api/sandbox/interp_client.c api/sandbox/base64.c api/sandbox/connect.c \
		api/sandbox/net.c api/sandbox/net_plan.c api/sandbox/jail.c api/sandbox/pool.c \
		api/sandbox/loopback.c api/sandbox/sibling.c api/sandbox/guest_run.c \
		api/sandbox/guest_fs.c api/sandbox/guest_stat.c api/sandbox/spare.c \
		api/sandbox/start_gate.c api/sandbox/expose.c api/sandbox/agent_fwd.c \
		vmm/pvm/detect.c guest-init/fd_splice.c
# The loopback HTTP listener of the servers (libmicrohttpd): not emberctl's.
LISTENER_SRCS := api/sandbox/listener.c
# Images (issue 22): SRC forms -> an ext4 disk and the run defaults, with
# ember's guest parts added; emberctl's `template build --from-image`
# (template_image.c), build/test/image-unpack for
# tests/integration/image_unpack.sh, test_image for the pure parts.
# libcrypto: sha256 of blobs and layers; zlib: gunzipped layers' diff_ids.
IMAGE_CODE_SRCS := api/sandbox/image_src.c api/sandbox/image_oci.c \
		api/sandbox/image_unpack.c api/sandbox/image_disk.c api/sandbox/image_tar.c \
		api/sandbox/image_guest.c api/sandbox/image_tool.c
IMAGE_SRCS := $(IMAGE_CODE_SRCS) api/sandbox/files.c api/sandbox/clock.c
IMAGE_LIBS := -ljansson -lcrypto -lz
# Dockerfiles (issue 22, `template build --dockerfile`): the parser, the
# steps' cache keys and a COPY's files digest; FROM's SRC is checked with
# image__parse_src (image_src.c).  test_dockerfile and fuzz_dockerfile.
DOCKERFILE_SRCS := api/sandbox/dockerfile.c api/sandbox/dockerignore.c
DOCKERFILE_TEST_SRCS := $(DOCKERFILE_SRCS) api/sandbox/image_src.c api/sandbox/files.c
# The build cache's bound (least recently used disks removed): test_build_cache.
BUILD_CACHE_SRCS := api/sandbox/build_cache.c
# Of the VMM: the configuration's limits and the disk overlays (template
# disks, each restored sandbox's own overlay over one).
EMBERCTL_SRCS := api/emberctl/emberctl.c api/emberctl/help.c api/emberctl/cli.c \
		api/emberctl/run.c api/emberctl/exec.c api/emberctl/cp.c \
		api/emberctl/lifecycle.c api/emberctl/templates.c api/emberctl/code.c \
		api/emberctl/expose.c $(SANDBOX_SRCS) vmm/config.c snapshot/overlay.c \
		snapshot/overlay_format.c api/sandbox/template_image.c \
		api/sandbox/template_docker.c $(IMAGE_CODE_SRCS) $(DOCKERFILE_SRCS) \
		$(BUILD_CACHE_SRCS)
# exec -t's host terminal (raw mode, window size).
EMBERCTL_SRCS += api/emberctl/tty.c
# Kept processes (issue 24, item 4): emberctl attach and ps.
EMBERCTL_SRCS += api/emberctl/attach.c
# libcurl and jansson speak to ember's control socket (pause, snapshots);
# zlib: the overlays' CRCs and image layers; libcrypto: the images'
# digests.
EMBERCTL_LIBS := -lcurl -ljansson -lz -lcrypto

# A front end of the sandbox library, $(1) (its binary's name), built
# from $(2)_SRCS and linked with $(2)_LIBS: the release binary in `all`,
# the sanitizer build the tests drive ($(1)-asan) in `asan`.
define FRONT_END
all: $(BUILD)/$(1)
asan: $(BUILD)/$(1)-asan

$(BUILD)/$(1): $($(2)_SRCS:%.c=$(BUILD)/obj/%.o)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$($(2)_LIBS) $$(LDLIBS)

$(BUILD)/$(1)-asan: $($(2)_SRCS:%.c=$(BUILD)/asan/%.o)
	$$(CC) $$(SAN) -pie -o $$@ $$^ $$($(2)_LIBS) $$(LDLIBS)
endef

# A front end's pure protocol code, $(1)_PURE_SRCS, linked alone by its
# unit tests (tests/unit/test_$(2)_*.c) and its fuzz target
# (tests/fuzz/fuzz_$(2).c, rebuilt when a header of api/$(2)/ changes).
define PURE_TESTS
$(BUILD)/test/test_$(2)_%: tests/unit/test_$(2)_%.c $($(1)_PURE_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(TCFLAGS) -o $$@ $$(filter %.c %.o,$$^) -lcmocka -ljansson $$(LDLIBS)

$(BUILD)/fuzz/fuzz_$(2): tests/fuzz/fuzz_$(2).c $($(1)_PURE_SRCS) $(wildcard api/$(2)/*.h)
	@mkdir -p $$(dir $$@)
	clang $$(FUZZ_CFLAGS) -o $$@ $$< $($(1)_PURE_SRCS) -ljansson -lpthread
endef

$(eval $(call FRONT_END,emberctl,EMBERCTL))

$(BUILD)/test/test_agent_client: tests/unit/test_agent_client.c \
		$(AGENT_CLIENT_SRCS:%.c=$(BUILD)/asan/%.o) $(BUILD)/asan/api/sandbox/clock.o \
		$(BUILD)/asan/api/sandbox/files.o $(BUILD)/test/agent-host
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $< $(AGENT_CLIENT_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(BUILD)/asan/api/sandbox/clock.o $(BUILD)/asan/api/sandbox/files.o -lcmocka $(LDLIBS)
$(BUILD)/test/test_interp_client: tests/unit/test_interp_client.c \
		$(BUILD)/asan/api/sandbox/interp_client.o $(BUILD)/asan/api/sandbox/base64.o \
		$(AGENT_CLIENT_SRCS:%.c=$(BUILD)/asan/%.o) $(BUILD)/asan/api/sandbox/clock.o \
		$(BUILD)/asan/api/sandbox/files.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka -ljansson $(LDLIBS)
$(BUILD)/test/test_net: tests/unit/test_net.c $(BUILD)/asan/api/sandbox/net.o \
		$(BUILD)/asan/api/sandbox/net_plan.o \
		$(BUILD)/asan/api/sandbox/files.o $(BUILD)/asan/api/sandbox/clock.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS)

asan: $(BUILD)/test/image-unpack
$(BUILD)/test/image-unpack: tests/host-progs/image_unpack.c \
		$(IMAGE_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) $(IMAGE_LIBS) $(LDLIBS)
$(BUILD)/test/test_image: tests/unit/test_image.c \
		$(IMAGE_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(IMAGE_LIBS) $(LDLIBS)
$(BUILD)/test/test_dockerignore: tests/unit/test_dockerignore.c \
		$(BUILD)/asan/api/sandbox/dockerignore.o $(BUILD)/asan/api/sandbox/files.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS)
$(BUILD)/test/test_dockerfile: tests/unit/test_dockerfile.c \
		$(DOCKERFILE_TEST_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka -ljansson -lcrypto $(LDLIBS)
$(BUILD)/test/test_build_cache: tests/unit/test_build_cache.c \
		$(BUILD_CACHE_SRCS:%.c=$(BUILD)/asan/%.o) $(BUILD)/asan/api/sandbox/files.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS)
# The TTL's clock and the info file (record.c): test_sandbox_ttl.
$(BUILD)/test/test_sandbox_ttl: tests/unit/test_sandbox_ttl.c \
		$(BUILD)/asan/api/sandbox/record.o $(BUILD)/asan/api/sandbox/clock.o \
		$(BUILD)/asan/api/sandbox/files.o $(BUILD)/asan/api/sandbox/net_plan.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS)
$(BUILD)/test/test_start_gate: tests/unit/test_start_gate.c \
		$(BUILD)/asan/api/sandbox/start_gate.o $(BUILD)/asan/vmm/pvm/detect.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS)
# --- end of emberctl -------------------------------------------------------

# --- ember-mcp (api/mcp/): the MCP server ---------------------------------
# The protocol (jsonrpc, mcp, schema, tools, and UTF-8 for JSON from
# api/sandbox/utf8.c) is pure and linked alone by its unit tests and fuzz
# target (test_mcp_protocol adds the guest's stat records,
# api/sandbox/guest_stat.c); backend, transports and main add the
# sandbox library (as emberctl) and its HTTP listener (libmicrohttpd) for
# Streamable HTTP.
MCP_PURE_SRCS := api/mcp/jsonrpc.c api/mcp/mcp.c api/mcp/schema.c \
		api/mcp/tools.c api/sandbox/utf8.c api/sandbox/clock.c
MCP_SRCS := $(sort $(MCP_PURE_SRCS) api/mcp/backend.c api/mcp/roster.c \
		api/mcp/owner.c api/mcp/stdio.c \
		api/mcp/http.c api/mcp/main.c $(SANDBOX_SRCS) $(LISTENER_SRCS) \
		vmm/config.c snapshot/overlay.c snapshot/overlay_format.c)
MCP_LIBS := -lmicrohttpd $(EMBERCTL_LIBS)

$(eval $(call FRONT_END,ember-mcp,MCP))
$(eval $(call PURE_TESTS,MCP,mcp))

$(BUILD)/test/test_mcp_protocol: $(BUILD)/asan/api/sandbox/guest_stat.o
# test_mcp_owner: the owner record (owner.c), SHA-256 from libcrypto.
$(BUILD)/test/test_mcp_owner: $(BUILD)/asan/api/mcp/owner.o \
		$(BUILD)/asan/api/sandbox/files.o
$(BUILD)/test/test_mcp_owner: LDLIBS += -lcrypto
# --- end of ember-mcp ------------------------------------------------------

# --- ember-e2b (api/e2b/): E2B's API on the sandbox library ---------------
# The Connect codec and the record are pure and linked alone by their unit
# tests and the fuzz target; the rest adds the sandbox library (as
# emberctl) and libmicrohttpd.
E2B_PURE_SRCS := api/e2b/connect_rpc.c api/e2b/record.c api/sandbox/base64.c \
		api/e2b/http1.c \
		api/sandbox/files.c api/e2b/template_spec.c
E2B_SRCS := $(E2B_PURE_SRCS) api/e2b/main.c api/e2b/http.c api/e2b/route.c \
		api/e2b/reply.c api/e2b/stream.c \
		api/e2b/control.c api/e2b/control_lifecycle.c \
		api/e2b/control_templates.c api/e2b/control_sandbox.c \
		api/e2b/forget.c api/e2b/guest.c \
		api/e2b/proc_event.c api/e2b/proc_sub.c api/e2b/proc_stdin.c \
		api/e2b/procs.c \
		api/e2b/process.c \
		api/e2b/fs_script.c api/e2b/fs_watch.c api/e2b/filesystem.c \
		api/e2b/envd_path.c api/e2b/file_transfer.c \
		api/e2b/interp_text.c api/e2b/interp_conn.c api/e2b/interp_exec.c \
		api/e2b/interp.c api/e2b/template_build.c api/e2b/port_proxy.c \
		api/sandbox/utf8.c $(LISTENER_SRCS) \
		$(filter-out api/sandbox/base64.c api/sandbox/files.c,$(SANDBOX_SRCS)) vmm/config.c \
		snapshot/overlay.c snapshot/overlay_format.c
E2B_LIBS := -lmicrohttpd $(EMBERCTL_LIBS)

.PHONY: e2b
e2b: $(BUILD)/ember-e2b

$(eval $(call FRONT_END,ember-e2b,E2B))
$(eval $(call PURE_TESTS,E2B,e2b))
# The template translation's test and fuzz target parse what it makes with
# ember's Dockerfile parser.
$(BUILD)/test/test_e2b_template: $(DOCKERFILE_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(BUILD)/asan/api/sandbox/image_src.o
$(BUILD)/test/test_e2b_template: LDLIBS += -lcrypto
# Streamed answers and a process's subscribers, with their events.
$(BUILD)/test/test_e2b_stream: $(BUILD)/asan/api/e2b/stream.o \
		$(BUILD)/asan/api/e2b/proc_sub.o $(BUILD)/asan/api/e2b/proc_event.o \
		$(BUILD)/asan/api/sandbox/clock.o
$(BUILD)/fuzz/fuzz_e2b_template: tests/fuzz/fuzz_e2b_template.c $(E2B_PURE_SRCS) \
		$(DOCKERFILE_SRCS) api/sandbox/image_src.c $(wildcard api/e2b/*.h)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(E2B_PURE_SRCS) $(DOCKERFILE_SRCS) \
		api/sandbox/image_src.c -ljansson -lcrypto -lpthread
# The port proxy's HTTP/1.x parsing, alone.
$(BUILD)/fuzz/fuzz_e2b_http1: tests/fuzz/fuzz_e2b_http1.c api/e2b/http1.c \
		api/e2b/http1.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< api/e2b/http1.c
# --- end of ember-e2b ------------------------------------------------------

# --- ember-jailer (api/jailer/): Firecracker's jailer for ember -----------
# libcap-ng drops the capabilities; test_jailer_args links the parser alone.
.PHONY: jailer
all: $(BUILD)/ember-jailer
jailer: $(BUILD)/ember-jailer

$(BUILD)/ember-jailer: $(JAILER_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(LDFLAGS) -o $@ $^ -lcap-ng

$(BUILD)/test/test_jailer_args: tests/unit/test_jailer_args.c \
		$(BUILD)/asan/api/jailer/jailer_args.o $(BUILD)/asan/api/jailer/jailer_err.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka
# The ELF header parser is pure: its unit test and fuzz target link it alone.
$(BUILD)/test/test_jailer_elf: tests/unit/test_jailer_elf.c \
		$(BUILD)/asan/api/jailer/jailer_elf.o
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka
$(BUILD)/fuzz/fuzz_jailer_elf: tests/fuzz/fuzz_jailer_elf.c api/jailer/jailer_elf.c \
		api/jailer/jailer.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< api/jailer/jailer_elf.c
# --- end of ember-jailer ---------------------------------------------------

# --- containerd shim (api/containerd/): containerd-shim-ember-v1 ----------
# containerd's runtime v2 shim.  Its protobuf messages (api/containerd/proto/,
# containerd's packages and field numbers) are generated by protoc-c into
# $(BUILD)/gen/api/containerd/proto/ (included as "proto/x.pb-c.h"); every
# object of api/containerd/ waits for all the generated headers.  The
# generated C builds with the project's flags unrelaxed (protobuf-c 1.4.1).
# The pure part (ttrpc's codec, server and client, the socket address, the
# events' encoding) is linked alone by test_containerd_ttrpc and
# fuzz_containerd; the shim adds the task service and the sandbox library.
CONTAINERD_PROTOS := $(wildcard api/containerd/proto/*.proto)
CONTAINERD_GEN_DIR := $(BUILD)/gen/api/containerd
CONTAINERD_GEN_C := $(CONTAINERD_PROTOS:api/containerd/%.proto=$(CONTAINERD_GEN_DIR)/%.pb-c.c)
CONTAINERD_GEN_H := $(CONTAINERD_GEN_C:%.c=%.h)
CONTAINERD_PURE_SRCS := api/containerd/ttrpc_codec.c api/containerd/ttrpc.c \
		api/containerd/address.c api/containerd/events.c api/sandbox/clock.c
CONTAINERD_SRCS := $(sort $(wildcard api/containerd/*.c) $(SANDBOX_SRCS) \
		$(IMAGE_CODE_SRCS) vmm/config.c $(wildcard snapshot/overlay*.c))
CONTAINERD_LIBS := -lprotobuf-c $(EMBERCTL_LIBS)
CONTAINERD_OBJS := $(CONTAINERD_SRCS:%.c=$(BUILD)/obj/%.o) \
		$(CONTAINERD_GEN_C:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
CONTAINERD_ASAN_OBJS := $(CONTAINERD_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(CONTAINERD_GEN_C:$(BUILD)/gen/%.c=$(BUILD)/asan/gen/%.o)
CONTAINERD_PURE_ASAN_OBJS := $(CONTAINERD_PURE_SRCS:%.c=$(BUILD)/asan/%.o) \
		$(CONTAINERD_GEN_C:$(BUILD)/gen/%.c=$(BUILD)/asan/gen/%.o)

.PHONY: containerd-shim
all: $(BUILD)/containerd-shim-ember-v1
asan: $(BUILD)/containerd-shim-ember-v1-asan
containerd-shim: $(BUILD)/containerd-shim-ember-v1

$(CONTAINERD_GEN_DIR)/%.pb-c.c $(CONTAINERD_GEN_DIR)/%.pb-c.h: api/containerd/%.proto
	@mkdir -p $(dir $@)
	protoc-c -I api/containerd --c_out=$(CONTAINERD_GEN_DIR) $<
.SECONDARY: $(CONTAINERD_GEN_C) $(CONTAINERD_GEN_H)

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c | $(CONTAINERD_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CONTAINERD_GEN_DIR) -c -o $@ $<
$(BUILD)/asan/gen/%.o: $(BUILD)/gen/%.c | $(CONTAINERD_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -I$(CONTAINERD_GEN_DIR) -c -o $@ $<
$(filter $(BUILD)/obj/api/containerd/% $(BUILD)/asan/api/containerd/%, \
		$(CONTAINERD_OBJS) $(CONTAINERD_ASAN_OBJS)): | $(CONTAINERD_GEN_H)
$(filter $(BUILD)/obj/api/containerd/% $(BUILD)/asan/api/containerd/%, \
		$(CONTAINERD_OBJS) $(CONTAINERD_ASAN_OBJS)): \
		CFLAGS += -I$(CONTAINERD_GEN_DIR)
$(filter $(BUILD)/obj/api/containerd/% $(BUILD)/asan/api/containerd/%, \
		$(CONTAINERD_OBJS) $(CONTAINERD_ASAN_OBJS)): \
		TCFLAGS += -I$(CONTAINERD_GEN_DIR)

$(BUILD)/containerd-shim-ember-v1: $(CONTAINERD_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(CONTAINERD_LIBS) $(LDLIBS)
$(BUILD)/containerd-shim-ember-v1-asan: $(CONTAINERD_ASAN_OBJS)
	$(CC) $(SAN) -pie -o $@ $^ $(CONTAINERD_LIBS) $(LDLIBS)

$(BUILD)/test/test_containerd_ttrpc: tests/unit/test_containerd_ttrpc.c \
		$(CONTAINERD_PURE_ASAN_OBJS) | $(CONTAINERD_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -I$(CONTAINERD_GEN_DIR) -o $@ $(filter %.c %.o,$^) \
		-lcmocka -lprotobuf-c -ljansson -lcrypto $(LDLIBS)
$(BUILD)/fuzz/fuzz_containerd: tests/fuzz/fuzz_containerd.c $(CONTAINERD_PURE_SRCS) \
		$(wildcard api/containerd/*.h) $(CONTAINERD_GEN_C) | $(CONTAINERD_GEN_H)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -I$(CONTAINERD_GEN_DIR) -o $@ $< $(CONTAINERD_PURE_SRCS) \
		$(CONTAINERD_GEN_C) -lprotobuf-c -ljansson -lcrypto -lpthread
# The OCI spec reader and the mount options: pure, linked alone by
# test_containerd_spec and fuzz_containerd_spec.
CONTAINERD_SPEC_SRCS := api/containerd/oci_spec.c api/containerd/mount_opts.c
$(BUILD)/test/test_containerd_spec: tests/unit/test_containerd_spec.c \
		$(CONTAINERD_SPEC_SRCS:%.c=$(BUILD)/asan/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(TCFLAGS) -o $@ $(filter %.c %.o,$^) -lcmocka -ljansson $(LDLIBS)
$(BUILD)/fuzz/fuzz_containerd_spec: tests/fuzz/fuzz_containerd_spec.c \
		$(CONTAINERD_SPEC_SRCS) api/containerd/oci_spec.h api/containerd/rootfs.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(CONTAINERD_SPEC_SRCS) -ljansson
# --- end of containerd shim ------------------------------------------------

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
