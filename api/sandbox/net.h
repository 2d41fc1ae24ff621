/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox networking: each sandbox with a network device runs its ember
 * in a network namespace of its own, ember-<id> (under /run/netns, so that
 * `ip netns exec ember-<id> ...` reaches it), holding a persistent tap,
 * tap0, owned by the uid ember runs as (so that an ember without
 * capabilities, as the jailer will run it, can open it).  Every namespace
 * has the same addresses: the tap's host side 172.16.0.1/30, the guest
 * 172.16.0.2 (given by the kernel's ip= argument, NET_GUEST_CMDLINE), so
 * that the address in a template's memory is right in every sandbox
 * restored from it, and the tap keeps its name.
 *
 * Modes (enum net_mode):
 *   none       tap0 up, no address, no route: the guest reaches nothing
 *   host-only  tap0 has 172.16.0.1/30: the guest reaches the namespace's
 *              host side alone (what runs there: `ip netns exec`)
 *   nat        plus a veth pair from the host's namespace (ve-<id>, an
 *              address .1 of a /30 of NET_POOL) into the sandbox's
 *              (veth0, .2), a default route through it, the guest's
 *              traffic masqueraded as veth0's address in the namespace
 *              and as the outgoing device's in the host's; IPv4
 *              forwarding on in both.  The host's iptables (chains
 *              EMBER-INPUT, EMBER-FORWARD in filter and EMBER-POSTROUTING
 *              in nat, each hooked once at the top of its built-in
 *              chain) drop whatever comes from a sandbox's veth to the
 *              host's own addresses (any of them: a service on 0.0.0.0
 *              too), to NET_POOL (other sandboxes), and anything new
 *              towards a sandbox.  Each sandbox's rules carry the comment
 *              ember-<id>; its clean-up deletes those, and the chains
 *              with their hooks once they are empty.
 *
 * What is host-wide (the pool's leases, the iptables chains) is changed
 * under one lock, NET_RUN_DIR/lock; a lease is the file
 * NET_RUN_DIR/slots/<n> holding the sandbox id.  Setting up needs root
 * (CAP_SYS_ADMIN for the namespace's mount, CAP_NET_ADMIN); it runs ip(8)
 * and iptables-restore(8) (found in $PATH, else /usr/sbin, /sbin).
 *
 * What follows from the sandbox id and the host's files alone (names,
 * addresses, leases' slots, the iptables script, resolv.conf) is pure, in
 * net_plan.h; this file is what runs ip(8) and iptables.
 *
 * Functions that can fail take @err/@errlen and leave there one line of
 * text on failure (the sandbox.h convention).
 */
#ifndef EMBER_API_NET_H
#define EMBER_API_NET_H

#include <stddef.h>
#include <sys/types.h>

#include "net_plan.h"

/* What net__setup() makes. */
struct net_setup {
	const char *id; /* the sandbox's */
	enum net_mode mode;
	uid_t tap_uid; /* tap0's owner: the uid ember runs as */
	gid_t tap_gid;
};

/*
 * net__setup() - make the network of sandbox @s->id (see above):
 * whatever an earlier life of it left is removed first.  0, or a
 * negative errno with @err naming the step that failed (and the tool's
 * own words); then everything it made is removed again.
 */
int net__setup(const struct net_setup *s, char *err, size_t errlen);

/*
 * net__teardown() - remove whatever network sandbox @id has, wholly or
 * half made: its iptables rules (and the EMBER-* chains left empty), the
 * veth, its lease, its namespace (with the tap in it; the namespace goes
 * once ember, which runs in it, has ended).  Nothing there is no error:
 * cheap when the sandbox never had a network.  0, or the first failure
 * (it goes on past it), with @err.
 */
int net__teardown(const char *id, char *err, size_t errlen);

/*
 * net__ns_open() - an fd (O_CLOEXEC) on the namespace of sandbox @id,
 * for setns(2) in ember's child; the caller closes it.  -ENOENT when it
 * has none, other negative errno.
 */
int net__ns_open(const char *id);

#endif /* EMBER_API_NET_H */
