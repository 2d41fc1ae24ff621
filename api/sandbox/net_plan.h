/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan of a sandbox's network (net.h says what it is), pure: its
 * modes, the names and addresses that follow from the sandbox id, the
 * choice of a lease's slot, the iptables-restore(8) script from
 * iptables-save(8)'s text, and the guest's resolv.conf from the host's.
 * Nothing here runs a program or changes the host: unit-tested alone.
 */
#ifndef EMBER_API_NET_PLAN_H
#define EMBER_API_NET_PLAN_H

#include <stddef.h>
#include <stdint.h>

enum net_mode {
	NET_NONE = 0, /* a device, no network */
	NET_HOST_ONLY = 1, /* the namespace's host side only */
	NET_NAT = 2, /* out through the host's uplink */
};

#define NET_TAP_NAME   "tap0" /* in every sandbox's namespace */
#define NET_IFACE_ID   "eth0" /* ember's iface_id of the device */
#define NET_GUEST_MAC  "06:00:ac:10:00:02" /* local, from the address */
#define NET_HOST_ADDR  "172.16.0.1" /* the tap's address (host side) */
#define NET_GUEST_ADDR "172.16.0.2"
#define NET_TAP_CIDR   NET_HOST_ADDR "/30"
#define NET_GUEST_CIDR "172.16.0.0/30"
/* The guest kernel's static address (Documentation/admin-guide/nfs/
   nfsroot.rst, "ip="): client::gateway:netmask::device:autoconf. */
#define NET_GUEST_CMDLINE \
	"ip=" NET_GUEST_ADDR "::" NET_HOST_ADDR ":255.255.255.252::eth0:off"
#define NET_NS_PREFIX	"ember-" /* + the sandbox id */
#define NET_VETH_PREFIX "ve-" /* + the sandbox id: 15 bytes, IFNAMSIZ - 1 */
#define NET_NS_VETH	"veth0" /* the veth's end in the namespace */
#define NET_POOL	"10.201.0.0/16" /* the /30s of nat mode */
#define NET_POOL_BASE	0x0ac90000u /* 10.201.0.0 */
#define NET_SLOTS	16384u /* /30s in NET_POOL */
#define NET_RUN_DIR	"/run/ember/net"
#define NET_NETNS_DIR	"/run/netns" /* ip-netns(8)'s */
#define NET_NAME_MAX	32 /* bytes for any name above, with the NUL */
#define NET_ADDR_MAX	16 /* "255.255.255.255" and the NUL */
#define NET_RESOLV_MAX	1024 /* the guest's resolv.conf, bytes */
#define NET_ID_LEN	12 /* SANDBOX_ID_LEN */

/*
 * net__mode_parse() - "none", "host-only" or "nat" into *@mode: 0, or
 * -EINVAL for anything else (NULL too).
 */
int net__mode_parse(const char *s, enum net_mode *mode);

/* net__mode_name() - the word net__mode_parse() takes for @mode. */
const char *net__mode_name(enum net_mode mode);

/*
 * net__names() - the namespace's name (NET_NS_PREFIX + @id) and the host
 * end of the veth (NET_VETH_PREFIX + @id) of the sandbox @id (12
 * lowercase hex digits, SANDBOX_ID_LEN), each into NET_NAME_MAX bytes
 * (either may be NULL).  0, or -EINVAL for an @id that is not one.
 */
int net__names(const char *id, char ns[NET_NAME_MAX], char veth[NET_NAME_MAX]);

/*
 * net__slot_addrs() - the addresses of lease @slot (< NET_SLOTS) in
 * NET_POOL, dotted: @host, the veth's host end (.4n+1), and @ns, its end
 * in the namespace (.4n+2); either may be NULL.  -EINVAL for a slot out
 * of range.
 */
int net__slot_addrs(unsigned int slot, char host[NET_ADDR_MAX],
		    char ns[NET_ADDR_MAX]);

/*
 * net__slot_pick() - the lease to take: the first slot from @start (mod
 * NET_SLOTS) on, wrapping, whose bit in @used (NET_SLOTS bits, bit n of
 * byte n / 8) is clear; NET_SLOTS when all are used.
 */
unsigned int net__slot_pick(const uint8_t *used, unsigned int start);

/*
 * net__slot_start() - where the search for @id's lease starts: a hash of
 * the id, so that concurrent sandboxes rarely probe the same slots and a
 * resumed one often gets its old address back.  < NET_SLOTS.
 */
unsigned int net__slot_start(const char *id);

/* What a nat sandbox adds to the host's iptables. */
struct net_rules {
	const char *veth; /* its host end: NET_VETH_PREFIX + id */
	const char *ns_addr; /* the namespace end's address (dotted) */
};

/*
 * net__iptables_script() - the iptables-restore(8) input (for --noflush)
 * that brings the host's rules from @save (iptables-save(8)'s output:
 * tables filter and nat at least, as far as there are any) to what the
 * sandbox @id needs: every rule of the EMBER-* chains commented
 * ember-<@id> deleted, then, with @add, its rules appended (and the
 * chains made and hooked where missing); without @add, each EMBER-*
 * chain left empty is unhooked and deleted.  Into @out (@outsz bytes);
 * returns the script's length (0: nothing to do), -EINVAL for a bad @id
 * or @add, -ENOSPC when @out is too small.
 */
int net__iptables_script(const char *save, const char *id,
			 const struct net_rules *add, char *out, size_t outsz);

/*
 * net__resolv_conf() - the guest's /etc/resolv.conf from the host's
 * (resolv.conf(5) text @host): its IPv4 "nameserver" lines except
 * 127.0.0.0/8 ones (a local stub the guest cannot reach), at most 3, and
 * its "search" / "domain" / "options" lines, into @out (@outsz bytes,
 * NUL-terminated, cut at a line).  Returns the number of nameservers
 * kept (0: the guest gets none).
 */
int net__resolv_conf(const char *host, char *out, size_t outsz);

/*
 * net__host_resolv() - net__resolv_conf() of /etc/resolv.conf, or of
 * systemd-resolved's upstream list (/run/systemd/resolve/resolv.conf)
 * when the first names only local stubs.  Returns the nameservers kept.
 */
int net__host_resolv(char *out, size_t outsz);

/*
 * net__ns_batch() - the ip(8) -batch input that configures the namespace
 * of a sandbox in @mode: lo up, the tap NET_TAP_NAME made (owned by
 * @tap_uid:@tap_gid) and up, its address NET_TAP_CIDR unless NET_NONE;
 * with NET_NAT also NET_NS_VETH's address @ns_addr/30, up, and the
 * default route via @host_addr (the veth's host end; both unused in the
 * other modes).  Into @out (@outsz bytes, > 0, always terminated): 0, or
 * -ENOSPC when it did not fit (then it is cut after the last whole
 * step).
 */
int net__ns_batch(enum net_mode mode, unsigned int tap_uid,
		  unsigned int tap_gid, const char *ns_addr,
		  const char *host_addr, char *out, size_t outsz);

#endif /* EMBER_API_NET_PLAN_H */
