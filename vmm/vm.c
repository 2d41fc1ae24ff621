// SPDX-License-Identifier: Apache-2.0
/* The VM's life cycle (see vm.h). */
#include "vm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/console.h"
#include "backends/console_out.h"
#include "builder.h"
#include "event.h"
#include "seccomp/seccomp.h"
#include "log.h"

static void vm__sigusr1(int sig)
{
	(void)sig; /* only interrupts KVM_RUN */
}

void vm__request_stop(struct vm *vm, enum vm_stop_reason reason)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->stop == VM_STOP_NONE) {
		vm->stop = reason;
		vm->t_stop_ms = log__ms();
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vm__stop_by_signal(struct vm *vm, int sig)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->stop == VM_STOP_NONE)
		vm->stop_signal = sig;
	pthread_mutex_unlock(&vm->lock);
	vm__request_stop(vm, VM_STOP_SIGNAL);
}

static void vm__device_event(void *opaque, enum device_event ev, uint32_t value)
{
	struct vm *vm = opaque;

	switch (ev) {
	case DEVICE_EVENT_RESET:
		log_info("guest reset through the i8042");
		vm__request_stop(vm, VM_STOP_REBOOT);
		break;
	case DEVICE_EVENT_EXIT_STATUS:
		pthread_mutex_lock(&vm->lock);
		vm->have_status = true;
		vm->exit_status = value;
		pthread_mutex_unlock(&vm->lock);
		log_info("guest reported exit status %u", value);
		/*
		 * Guest init flushes its filesystems before it reports, so
		 * the VM can end now instead of waiting for the reset.
		 */
		vm__request_stop(vm, VM_STOP_GUEST_EXIT);
		break;
	case DEVICE_EVENT_BOOT_TIMER:
		if (!vm->t_boot_timer_ms)
			vm->t_boot_timer_ms = log__ms();
		if (vm->cfg.boot_timer)
			log__printf(LOG_NOTE,
				    "guest boot time: %.3f ms since "
				    "ember started",
				    vm->t_boot_timer_ms);
		break;
	}
}

/* A vCPU stopped on its own: the guest's reset, crash, or an error. */
static void vm__vcpu_event(void *opaque, unsigned int vcpu, enum vcpu_event ev)
{
	(void)vcpu;
	switch (ev) {
	case VCPU_EVENT_TRIPLE_FAULT:
	case VCPU_EVENT_CRASH:
		vm__request_stop(opaque, VM_STOP_CRASH);
		break;
	case VCPU_EVENT_RESET:
		vm__request_stop(opaque, VM_STOP_REBOOT);
		break;
	case VCPU_EVENT_ERROR:
		vm__request_stop(opaque, VM_STOP_ERROR);
		break;
	}
}

/* The common part of a booted and a restored VM's creation. */
static int vm__build(struct vm *vm, const struct vm_config *cfg,
		     struct event_loop *el, struct vm **out)
{
	struct sigaction sa = { .sa_handler = vm__sigusr1 };
	struct device_events ev = { .notify = vm__device_event };
	int ret;

	vm->cfg = *cfg;
	vm->el = el;
	vm->uffd = vm->uffd_sock = vm->mem_base_fd = -1;
	vm->kvm.kvm_fd = vm->kvm.vm_fd = vm->console_fd = -1;
	vm->nr_vcpus = cfg->vcpus;
	vm->root_drive = -1;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	ev.opaque = vm;
	ret = builder__build(vm, ev, vm__vcpu_event);
	if (ret) {
		/*
		 * The event loop runs on: take the devices' handlers off it
		 * before they go, so that a failed start leaves nothing there
		 * and can be tried again (InstanceStart).
		 */
		devmgr__hold(&vm->dm, true);
		vm__destroy(vm);
		return ret;
	}
	*out = vm;
	return 0;
}

int vm__create(const struct vm_config *cfg, struct event_loop *el,
	       struct vm **out)
{
	struct vm *vm;

	*out = NULL;
	if (!cfg->kernel_path || !cfg->vcpus || cfg->vcpus > CONFIG_MAX_VCPUS)
		return -EINVAL;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	return vm__build(vm, cfg, el, out);
}

int vm__create_restored(struct vm_config *cfg, struct guest_mem *mem,
			struct event_loop *el, struct vm **out)
{
	struct vm *vm;
	int ret;

	*out = NULL;
	vm = calloc(1, sizeof(*vm));
	if (!vm || !cfg->vcpus || cfg->vcpus > CONFIG_MAX_VCPUS) {
		config__free_strings(cfg);
		mem__destroy(mem);
		free(vm);
		return vm ? -EINVAL : -ENOMEM;
	}
	vm->restored = true;
	vm->cfg_owned = true;
	vm->mem = *mem;
	memset(mem, 0, sizeof(*mem));
	ret = vm__build(vm, cfg, el, out);
	memset(cfg, 0, sizeof(*cfg)); /* the VM owns (or freed) its strings */
	if (ret)
		return ret;
	/* Paused until vm__resume(): nothing may touch the guest. */
	devmgr__hold(&vm->dm, true);
	vm->state = VM_STATE_PAUSED;
	vm->t_paused_ms = log__ms();
	return 0;
}

static void vm__console_quit(void *opaque)
{
	log_info("console: Ctrl-A x, stopping the VM");
	vm__request_stop(opaque, VM_STOP_QUIT);
}

/*
 * The event thread's seccomp filter, once the vCPU threads exist: they
 * must not inherit it (seccomp.h).  Here, on the event thread, is the
 * only place it can be installed.
 */
static int vm__lock_down(struct vm *vm)
{
	int ret;

	if (!event__on_thread(vm->el)) {
		log_error("seccomp: the VM must start on the event thread");
		return -EINVAL;
	}
	ret = seccomp__install(vm->vctx.seccomp, SECCOMP_EVENT, "event");
	if (ret)
		log_error("seccomp: the event thread's filter: %s",
			  strerror(-ret));
	return ret;
}

/*
 * The vCPU threads and console input, once in the VM's life.  With
 * seccomp, the threads start parked (each installs its own filter), the
 * event thread installs its filter, and only then does the guest run.
 */
static int vm__start_vcpus(struct vm *vm)
{
	bool lock = vm->vctx.seccomp != NULL;
	unsigned int i;
	int ret;

	vm->vcpus_started = true;
	/* A --run command's stdin is empty (guest init): nothing to pass. */
	if (vm->cfg.console == CONSOLE_STDIO && !vm->cfg.run_cmd)
		vm->console_in =
			console__start(vm->el, STDIN_FILENO,
				       devmgr__find(&vm->dm, "serial")->dev,
				       vm__console_quit, vm);
	for (i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu__start(&vm->vcpus[i], lock);
		if (ret) {
			vm__request_stop(vm, VM_STOP_ERROR);
			return ret;
		}
	}
	if (!lock)
		return 0;
	ret = vm__lock_down(vm);
	if (ret) {
		/* The parked threads end as the VM stops. */
		vm__request_stop(vm, VM_STOP_ERROR);
		return ret;
	}
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu__resume(&vm->vcpus[i]);
	return 0;
}

int vm__start(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->state != VM_STATE_CONFIGURED) {
		pthread_mutex_unlock(&vm->lock);
		return -EBUSY;
	}
	vm->state = VM_STATE_RUNNING;
	pthread_mutex_unlock(&vm->lock);
	return vm__start_vcpus(vm);
}

void vm__set_seccomp(struct vm *vm, const struct seccomp_set *s)
{
	vm->vctx.seccomp = s;
}

int vm__pause(struct vm *vm)
{
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&vm->lock);
	if (vm->state != VM_STATE_RUNNING) {
		pthread_mutex_unlock(&vm->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&vm->lock);
	/* A vCPU waiting on a stalled console reader must not hold us. */
	console_out__hold(vm->console_out, true);
	console__hold(vm->console_in, true);
	for (i = 0; i < vm->nr_vcpus && !ret; i++)
		ret = vcpu__pause(&vm->vcpus[i], VM_PAUSE_TIMEOUT_MS);
	if (ret) {
		log_warn("pause: vCPU %u did not stop within %d ms", i - 1,
			 VM_PAUSE_TIMEOUT_MS);
		for (i = 0; i < vm->nr_vcpus; i++)
			vcpu__resume(&vm->vcpus[i]);
		console__hold(vm->console_in, false);
		console_out__hold(vm->console_out, false);
		return ret;
	}
	/* Nothing on the event thread touches the guest from now on. */
	devmgr__hold(&vm->dm, true);
	pthread_mutex_lock(&vm->lock);
	vm->state = VM_STATE_PAUSED;
	vm->pauses++;
	vm->t_paused_ms = log__ms();
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

int vm__resume(struct vm *vm)
{
	unsigned int i;

	pthread_mutex_lock(&vm->lock);
	if (vm->state != VM_STATE_PAUSED) {
		pthread_mutex_unlock(&vm->lock);
		return -EBUSY;
	}
	vm->state = VM_STATE_RUNNING;
	vm->paused_ms += log__ms() - vm->t_paused_ms;
	pthread_mutex_unlock(&vm->lock);
	console_out__hold(vm->console_out, false);
	console__hold(vm->console_in, false);
	if (devmgr__hold(&vm->dm, false))
		log_warn("resume: a device's events could not be restarted");
	/* A restored VM's first resume starts its vCPU threads. */
	if (!vm->vcpus_started)
		return vm__start_vcpus(vm);
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu__resume(&vm->vcpus[i]);
	return 0;
}

enum vm_state vm__state(struct vm *vm)
{
	enum vm_state s;

	pthread_mutex_lock(&vm->lock);
	s = vm->state;
	pthread_mutex_unlock(&vm->lock);
	return s;
}

/* What ember exits with once the VM has stopped (see vm__wait()). */
static int vm__exit_status(const struct vm *vm)
{
	const char *panic = console_out__panic(vm->console_out);
	const char *run = vm->cfg.run_cmd ? " before the command reported its "
					    "exit status" :
					    "";

	if (vm->stop == VM_STOP_ERROR)
		return VM_EXIT_EMBER_ERROR;
	if (vm->stop == VM_STOP_SIGNAL) {
		log_warn("stopped by signal %d", vm->stop_signal);
		return 128 + vm->stop_signal;
	}
	if (vm->have_status)
		return (int)(vm->exit_status & 0xff);
	if (panic) {
		/* Without the patch guest init dies of SIGSEGV (README). */
		log_error("the guest kernel panicked%s: %s%s", run, panic,
			  vm->pvm && strstr(panic, "Attempted to kill init") ?
				  " (on PVM hosts, a guest kernel without "
				  "ember's SYSCALL patch ends this way: see "
				  "README)" :
				  "");
		return VM_EXIT_EMBER_ERROR;
	}
	if (vm->stop == VM_STOP_CRASH) {
		log_error("the guest crashed (triple fault)%s", run);
		return VM_EXIT_EMBER_ERROR;
	}
	if (vm->stop == VM_STOP_REBOOT && vm->cfg.run_cmd) {
		log_error("the guest rebooted%s: a reboot from inside the "
			  "guest%s",
			  run,
			  vm->cfg.console == CONSOLE_NONE ?
				  ", or a kernel panic (its message does not "
				  "reach ember with --console none)" :
				  "");
		return VM_EXIT_EMBER_ERROR;
	}
	return 0; /* a reboot without --run, or Ctrl-A x */
}

static void vm__stop_vcpus(void *arg)
{
	struct vm *vm = arg;
	unsigned int i;

	/* A vCPU waiting on a stalled console reader must not hold us. */
	console_out__stop(vm->console_out);
	for (i = 0; i < vm->nr_vcpus; i++)
		vcpu__destroy(&vm->vcpus[i]);
}

int vm__wait(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	while (vm->stop == VM_STOP_NONE)
		pthread_cond_wait(&vm->cond, &vm->lock);
	if (vm->state == VM_STATE_PAUSED)
		vm->paused_ms += log__ms() - vm->t_paused_ms;
	vm->state = VM_STATE_STOPPED;
	pthread_mutex_unlock(&vm->lock);
	/*
	 * On the event thread, so that no control call (a pause) is at work
	 * on the vCPUs while they go.
	 */
	event__call(vm->el, vm__stop_vcpus, vm);
	return vm__exit_status(vm);
}

void vm__destroy(struct vm *vm)
{
	unsigned int i;

	if (!vm)
		return;
	console_out__stop(vm->console_out);
	if (vm->vcpus) {
		for (i = 0; i < vm->nr_vcpus; i++)
			vcpu__destroy(&vm->vcpus[i]);
		free(vm->vcpus);
	}
	console__destroy(vm->console_in);
	devmgr__destroy(&vm->dm);
	if (vm->console_fd > STDERR_FILENO)
		close(vm->console_fd);
	console_out__destroy(vm->console_out);
	kvm__close(&vm->kvm);
	mem__destroy(&vm->mem);
	if (vm->uffd >= 0)
		close(vm->uffd);
	if (vm->uffd_sock >= 0)
		close(vm->uffd_sock);
	if (vm->mem_base_fd >= 0)
		close(vm->mem_base_fd);
	if (vm->cfg_owned)
		config__free_strings(&vm->cfg);
	free(vm->mem_base_path);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}
