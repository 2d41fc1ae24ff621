/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The start gate: at most a few sandboxes of this host starting at once,
 * on PVM hosts only.
 *
 * On a host whose /dev/kvm comes from kvm_pvm, guest kernel mode runs in
 * the host's instruction emulator, and the host's cost of switching
 * between busy PVM guests on one core grows past the work itself: with
 * two cores, 4 sandboxes restored at once were up in 4 s, 6 at once none
 * in 120 s, 10 at once none in 200 s (every vCPU busy, the guests' kernels
 * making no progress), while 10 restored one after another took 11 s and
 * one restore among 8 busy host processes 4 s.  So on such a host a
 * sandbox's start (ember started, boot or restore, until the agent
 * answers) holds one of as many slots as the host has online CPUs; idle
 * sandboxes hold none.  Elsewhere (hardware KVM) there is no gate.
 *
 * The slots are flock(2)ed files /dev/shm/ember-start-gate.UID.K (K from
 * 0), shared by every state directory of the user; a slot is free again
 * when its holder closes the descriptor or dies.  EMBER_START_LIMIT=N
 * sets the number of slots on any host (0: no gate).
 */
#ifndef EMBER_API_START_GATE_H
#define EMBER_API_START_GATE_H

/*
 * start_gate__slots() - the number of slots on this host: EMBER_START_LIMIT
 * when set (a number 0..1024), else the online CPUs on a PVM host
 * (/sys/module/kvm_pvm), else 0 (no gate).
 */
unsigned int start_gate__slots(void);

/*
 * start_gate__try() - take a free slot of @slots (1..1024) in the
 * directory @dir (NULL: /dev/shm, the host's gate) without waiting: the
 * slot's open descriptor (>= 0, close-on-exec; closing it frees the
 * slot), -EAGAIN when every slot is held, or another negative errno when
 * no slot file can be opened (then the caller goes on without the gate:
 * a gate that cannot work must not stop sandboxes).
 */
int start_gate__try(const char *dir, unsigned int slots);

#endif
