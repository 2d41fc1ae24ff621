/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's side of a container's root (the containerd shim,
 * api/containerd/pod.c), as subcommands of the agent's own binary, so
 * that setting a root up or taking it down is one exec in the guest, not
 * one per mount (each exec costs the most where the guest kernel is
 * slow, under PVM):
 *
 *   ember-agent ctr-root DEV SECTORS ROOT RO HOSTNAME [MOUNT...]
 *       wait (up to 10 s) until /sys/block/DEV/size reads SECTORS (the
 *       disk swapped into the drive: the guest sees the new capacity a
 *       moment after the host's PATCH), mount /dev/DEV (ext4) on ROOT
 *       (made), then each MOUNT, a text
 *       "TYPE\tSOURCE\tDEST\tOPTIONS" (DEST inside ROOT, already
 *       cleaned by the host; OPTIONS comma-separated as mount(8) takes
 *       them; TYPE devpts binds the guest's own /dev/pts; cgroup, cgroup2
 *       and mqueue are skipped where the kernel lacks them), give a
 *       tmpfs /dev the nodes and links runc gives a container (null,
 *       zero, full, random, urandom, tty bound from the guest's; fd,
 *       stdin, stdout, stderr, ptmx links), set HOSTNAME when not "",
 *       and with RO "1" remount ROOT read-only (RO "2": left to ctr-ro,
 *       once the caller wrote into it; "0": read-write).
 *   ember-agent ctr-ro ROOT
 *       remount ROOT read-only.
 *   ember-agent ctr-unroot ROOT
 *       kill what still runs in ROOT (its root directory is ROOT), then
 *       unmount ROOT and everything below it (lazily when busy).
 *
 * Exit status 0, or 1 with one line on stderr naming the step.
 */
#ifndef EMBER_GUEST_AGENT_CTR_H
#define EMBER_GUEST_AGENT_CTR_H

/* agent_ctr__main() - the subcommands above (@argv[1] names one). */
int agent_ctr__main(int argc, char **argv);

#endif /* EMBER_GUEST_AGENT_CTR_H */
