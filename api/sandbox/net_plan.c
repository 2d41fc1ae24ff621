// SPDX-License-Identifier: Apache-2.0
/* The plan of a sandbox's network, pure: see net_plan.h. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_plan.h"

#define NET_CHAIN_INPUT "EMBER-INPUT"
#define NET_CHAIN_FWD	"EMBER-FORWARD"
#define NET_CHAIN_POST	"EMBER-POSTROUTING"

/* ---- pure: names, addresses, leases ------------------------------------- */

int net__mode_parse(const char *s, enum net_mode *mode)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "none"))
		*mode = NET_NONE;
	else if (!strcmp(s, "host-only"))
		*mode = NET_HOST_ONLY;
	else if (!strcmp(s, "nat"))
		*mode = NET_NAT;
	else
		return -EINVAL;
	return 0;
}

const char *net__mode_name(enum net_mode mode)
{
	switch (mode) {
	case NET_HOST_ONLY:
		return "host-only";
	case NET_NAT:
		return "nat";
	default:
		return "none";
	}
}

static bool net__is_id(const char *id)
{
	size_t i;

	if (!id)
		return false;
	for (i = 0; id[i]; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return i == NET_ID_LEN;
}

int net__names(const char *id, char ns[NET_NAME_MAX], char veth[NET_NAME_MAX])
{
	if (!net__is_id(id))
		return -EINVAL;
	if (ns)
		snprintf(ns, NET_NAME_MAX, NET_NS_PREFIX "%s", id);
	if (veth)
		snprintf(veth, NET_NAME_MAX, NET_VETH_PREFIX "%s", id);
	return 0;
}

static void net__dotted(uint32_t a, char out[NET_ADDR_MAX])
{
	snprintf(out, NET_ADDR_MAX, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff,
		 (a >> 8) & 0xff, a & 0xff);
}

int net__slot_addrs(unsigned int slot, char host[NET_ADDR_MAX],
		    char ns[NET_ADDR_MAX])
{
	uint32_t base = NET_POOL_BASE + slot * 4u;

	if (slot >= NET_SLOTS)
		return -EINVAL;
	if (host)
		net__dotted(base + 1, host);
	if (ns)
		net__dotted(base + 2, ns);
	return 0;
}

unsigned int net__slot_pick(const uint8_t *used, unsigned int start)
{
	for (unsigned int i = 0; i < NET_SLOTS; i++) {
		unsigned int s = (start + i) % NET_SLOTS;

		if (!(used[s / 8] & (1u << (s % 8))))
			return s;
	}
	return NET_SLOTS;
}

unsigned int net__slot_start(const char *id)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % NET_SLOTS;
}

/* ---- pure: the iptables script ------------------------------------------ */

/* A growing text in a caller's buffer; full: the rest is refused. */
struct net_text {
	char *p;
	size_t len, cap;
	bool full;
};

__attribute__((format(printf, 2, 3))) static void net__add(struct net_text *t,
							   const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len) {
		t->full = true;
		t->p[t->len] = '\0';
		return;
	}
	t->len += (size_t)n;
}

enum { NET_T_FILTER, NET_T_NAT, NET_T_NR };

/* The EMBER-* chains: their table and the built-in chain they hook. */
static const struct {
	const char *name;
	int table;
	const char *hook;
} net_chains[] = {
	{ NET_CHAIN_INPUT, NET_T_FILTER, "INPUT" },
	{ NET_CHAIN_FWD, NET_T_FILTER, "FORWARD" },
	{ NET_CHAIN_POST, NET_T_NAT, "POSTROUTING" },
};

#define NET_NCHAINS (sizeof(net_chains) / sizeof(net_chains[0]))

/* What iptables-save shows of the EMBER-* chains. */
struct net_seen {
	bool exists[NET_NCHAINS];
	unsigned int hooks[NET_NCHAINS]; /* "-A HOOK -j CHAIN" lines */
	unsigned int others[NET_NCHAINS]; /* rules not of this sandbox */
};

/* Does the line @l (@n bytes) carry the comment ember-<@id>? */
static bool net__ours(const char *l, size_t n, const char *id)
{
	char a[64], b[64];
	size_t la, lb;

	la = (size_t)snprintf(a, sizeof(a), " --comment " NET_NS_PREFIX "%s",
			      id);
	lb = (size_t)snprintf(b, sizeof(b),
			      " --comment \"" NET_NS_PREFIX "%s\"", id);
	for (size_t i = 0; i < n; i++) {
		if (n - i >= la && !memcmp(l + i, a, la) &&
		    (i + la == n || l[i + la] == ' '))
			return true;
		if (n - i >= lb && !memcmp(l + i, b, lb))
			return true;
	}
	return false;
}

/* The EMBER-* chain that "-A NAME ..." (@l, @n bytes) appends to, or -1. */
static int net__rule_chain(const char *l, size_t n, int table)
{
	for (size_t c = 0; c < NET_NCHAINS; c++) {
		size_t k = strlen(net_chains[c].name);

		if (net_chains[c].table == table && n > 3 + k &&
		    !memcmp(l, "-A ", 3) &&
		    !memcmp(l + 3, net_chains[c].name, k) && l[3 + k] == ' ')
			return (int)c;
	}
	return -1;
}

/* Is @l (@n bytes) exactly the hook of chain @c? */
static bool net__is_hook(const char *l, size_t n, size_t c)
{
	char hook[64];
	int k = snprintf(hook, sizeof(hook), "-A %s -j %s", net_chains[c].hook,
			 net_chains[c].name);

	return (size_t)k == n && !memcmp(l, hook, n);
}

/* Is @l (@n bytes) the declaration ":NAME ..." of chain @c? */
static bool net__is_decl(const char *l, size_t n, size_t c)
{
	size_t k = strlen(net_chains[c].name);

	return n > k + 1 && l[0] == ':' &&
	       !memcmp(l + 1, net_chains[c].name, k) && l[k + 1] == ' ';
}

/*
 * Walk @save: fill @seen and, for each rule of this sandbox in table
 * @table (-1: just look), write its "-D" form to @t.
 */
static void net__scan(const char *save, const char *id, int table,
		      struct net_seen *seen, struct net_text *t)
{
	int cur = -1;

	for (const char *l = save; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		int c;

		if (n && l[n - 1] == '\r')
			n--;
		if (n >= 1 && l[0] == '*')
			cur = n == 7 && !memcmp(l, "*filter", 7) ?
				      NET_T_FILTER :
			      n == 4 && !memcmp(l, "*nat", 4) ? NET_T_NAT :
								-1;
		else if (cur >= 0 && n && l[0] == ':')
			for (size_t k = 0; k < NET_NCHAINS; k++)
				seen->exists[k] |= net_chains[k].table == cur &&
						   net__is_decl(l, n, k);
		else if (cur >= 0 && n > 3 && !memcmp(l, "-A ", 3)) {
			for (size_t k = 0; k < NET_NCHAINS; k++)
				if (net_chains[k].table == cur &&
				    net__is_hook(l, n, k))
					seen->hooks[k]++;
			c = net__rule_chain(l, n, cur);
			if (c >= 0 && !net__ours(l, n, id))
				seen->others[c]++;
			else if (c >= 0 && cur == table)
				net__add(t, "-D%.*s\n", (int)(n - 2), l + 2);
		}
		l = nl ? nl + 1 : NULL;
	}
}

static bool net__name_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s && s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_'))
			return false;
	return i > 0 && i <= max;
}

int net__iptables_script(const char *save, const char *id,
			 const struct net_rules *add, char *out, size_t outsz)
{
	struct net_text t = { .p = out, .cap = outsz };
	struct net_seen seen, again;
	struct in_addr a;

	if (!outsz)
		return -ENOSPC;
	out[0] = '\0';
	if (!net__is_id(id) ||
	    (add && (!net__name_ok(add->veth, IFNAMSIZ - 1) || !add->ns_addr ||
		     inet_pton(AF_INET, add->ns_addr, &a) != 1)))
		return -EINVAL;
	memset(&seen, 0, sizeof(seen));
	net__scan(save, id, -1, &seen, &t);
	for (int table = 0; table < NET_T_NR; table++) {
		size_t start = t.len, body;

		net__add(&t, "%s\n",
			 table == NET_T_FILTER ? "*filter" : "*nat");
		body = t.len;
		for (size_t c = 0; add && c < NET_NCHAINS; c++)
			if (net_chains[c].table == table && !seen.exists[c])
				net__add(&t, ":%s - [0:0]\n",
					 net_chains[c].name);
		/* This sandbox's rules go first (a setup done again). */
		memset(&again, 0, sizeof(again));
		net__scan(save, id, table, &again, &t);
		for (size_t c = 0; c < NET_NCHAINS; c++) {
			if (net_chains[c].table != table)
				continue;
			if (add && !seen.hooks[c])
				net__add(&t, "-I %s 1 -j %s\n",
					 net_chains[c].hook,
					 net_chains[c].name);
			if (add || !seen.exists[c] || seen.others[c])
				continue;
			/* Empty once ours are gone: unhooked, deleted. */
			for (unsigned int h = 0; h < seen.hooks[c]; h++)
				net__add(&t, "-D %s -j %s\n",
					 net_chains[c].hook,
					 net_chains[c].name);
			net__add(&t, "-X %s\n", net_chains[c].name);
		}
		if (add && table == NET_T_FILTER) {
			const char *v = add->veth;

			net__add(&t,
				 "-A " NET_CHAIN_INPUT " -i %s -m comment "
				 "--comment " NET_NS_PREFIX "%s -j DROP\n",
				 v, id);
			net__add(&t,
				 "-A " NET_CHAIN_FWD " -i %s -d " NET_POOL
				 " -m comment --comment " NET_NS_PREFIX
				 "%s -j DROP\n",
				 v, id);
			net__add(&t,
				 "-A " NET_CHAIN_FWD " -i %s -m comment "
				 "--comment " NET_NS_PREFIX "%s -j ACCEPT\n",
				 v, id);
			net__add(&t,
				 "-A " NET_CHAIN_FWD " -o %s -m conntrack "
				 "--ctstate RELATED,ESTABLISHED -m comment "
				 "--comment " NET_NS_PREFIX "%s -j ACCEPT\n",
				 v, id);
			net__add(&t,
				 "-A " NET_CHAIN_FWD " -o %s -m comment "
				 "--comment " NET_NS_PREFIX "%s -j DROP\n",
				 v, id);
		} else if (add) {
			net__add(&t,
				 "-A " NET_CHAIN_POST " -s %s/32 -m comment "
				 "--comment " NET_NS_PREFIX
				 "%s -j MASQUERADE\n",
				 add->ns_addr, id);
		}
		if (t.full)
			break;
		if (t.len == body) {
			/* Nothing to change in this table. */
			t.len = start;
			out[start] = '\0';
			continue;
		}
		net__add(&t, "COMMIT\n");
	}
	return t.full ? -ENOSPC : (int)t.len;
}

/* ---- pure: resolv.conf -------------------------------------------------- */

/* Is @line's first word @w (followed by a blank)?  Then its rest. */
static const char *net__word(const char *line, const char *w)
{
	size_t n = strlen(w);

	if (strncmp(line, w, n) || (line[n] != ' ' && line[n] != '\t'))
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

int net__resolv_conf(const char *host, char *out, size_t outsz)
{
	struct net_text t = { .p = out, .cap = outsz };
	int kept = 0;

	if (!outsz)
		return 0;
	out[0] = '\0';
	net__add(&t, "# written by emberctl from the host's resolv.conf\n");
	for (const char *l = host; l && *l;) {
		const char *nl = strchr(l, '\n'), *v;
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		char line[256], addr[64];
		struct in_addr a;
		size_t len = t.len;

		if (n < sizeof(line)) {
			memcpy(line, l, n);
			line[n] = '\0';
		} else {
			line[0] = '\0'; /* no resolver reads such a line */
		}
		l = nl ? nl + 1 : NULL;
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' ||
			     line[n - 1] == '\r'))
			line[--n] = '\0';
		v = net__word(line, "nameserver");
		if (v) {
			if (kept == 3 || strcspn(v, " \t") >= sizeof(addr))
				continue;
			snprintf(addr, sizeof(addr), "%.*s",
				 (int)strcspn(v, " \t"), v);
			if (inet_pton(AF_INET, addr, &a) != 1 ||
			    (ntohl(a.s_addr) >> 24) == 127)
				continue;
			net__add(&t, "nameserver %s\n", addr);
			if (t.full) {
				t.full = false;
				t.len = len;
				out[len] = '\0';
				break;
			}
			kept++;
			continue;
		}
		if (!net__word(line, "search") && !net__word(line, "domain") &&
		    !net__word(line, "options"))
			continue;
		net__add(&t, "%s\n", line);
		if (t.full) {
			t.full = false;
			t.len = len;
			out[len] = '\0';
			break;
		}
	}
	return kept;
}

int net__host_resolv(char *out, size_t outsz)
{
	static const char *const files[] = {
		"/etc/resolv.conf",
		"/run/systemd/resolve/resolv.conf",
	};
	char buf[8192];
	int kept = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		kept = net__resolv_conf(buf, out, outsz);
		if (kept)
			break;
	}
	return kept;
}

int net__ns_batch(enum net_mode mode, unsigned int tap_uid,
		  unsigned int tap_gid, const char *ns_addr,
		  const char *host_addr, char *out, size_t outsz)
{
	struct net_text t = { .p = out, .cap = outsz };

	net__add(&t,
		 "link set lo up\n"
		 "tuntap add dev " NET_TAP_NAME " mode tap vnet_hdr user %u "
		 "group %u\n"
		 "link set " NET_TAP_NAME " up\n",
		 tap_uid, tap_gid);
	if (mode != NET_NONE)
		net__add(&t,
			 "addr add " NET_TAP_CIDR " dev " NET_TAP_NAME "\n");
	if (mode == NET_NAT)
		net__add(&t,
			 "addr add %s/30 dev " NET_NS_VETH "\n"
			 "link set " NET_NS_VETH " up\n"
			 "route add default via %s\n",
			 ns_addr, host_addr);
	return t.full ? -ENOSPC : 0;
}
