// SPDX-License-Identifier: MIT
/*
 * tb5k-info A B - check the two ends of a loop pair through the uAPI and
 * sysfs: ABI version, TB5_IOC_GET_INFO, and that each end's sysfs peer_id is
 * the host id the other end reports.
 *
 * tb5k-info --tb N - the same for one end of a tb link (the other end is on
 * another host; tb5k-xfer --side checks the two hosts' ids against each
 * other): GET_INFO agrees with sysfs, backend "tb" with the tb attributes
 * (connected, a peer UUID, lanes and speed) and no "plugged", a peer that
 * is not this host.
 */
#include "tb5k.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

/* What a tb link adds in sysfs (dkms/tb5_tb.c), and what it has not. */
static void check_tb_attrs(struct tb5k_ctx *c, const struct tb5_info *info,
			   const char *name)
{
	static const char *const counters[] = {
		"ring_errors", "tx_zerocopy_frames", "tx_copied_frames",
	};
	unsigned int tx, rx;
	char buf[64];
	size_t i;

	TB5K_CHECK(tb5k_link_text(c->index, "plugged", buf, sizeof(buf)), name,
		   "a tb link has a plugged attribute (\"%s\")", buf);
	TB5K_CHECK(!tb5k_link_text(c->index, "tb_state", buf, sizeof(buf)) &&
		   !strcmp(buf, "connected"), name, "tb_state \"%s\"", buf);
	TB5K_CHECK(!tb5k_link_text(c->index, "peer_uuid", buf, sizeof(buf)) &&
		   strlen(buf) == 36 && buf[8] == '-', name,
		   "peer_uuid \"%s\"", buf);
	TB5K_CHECK(!tb5k_link_text(c->index, "e2e", buf, sizeof(buf)) &&
		   (!strcmp(buf, "0") || !strcmp(buf, "1")), name,
		   "e2e \"%s\"", buf);
	TB5K_CHECK(!tb5k_link_text(c->index, "link_lanes", buf, sizeof(buf)) &&
		   sscanf(buf, "%u %u", &tx, &rx) == 2 && tx && rx, name,
		   "link_lanes \"%s\"", buf);
	TB5K_CHECK(tb5k_link_u64(c->index, "lane_gbps") > 0, name,
		   "lane_gbps is 0");
	TB5K_CHECK(info->speed_mbps > 0, name, "GET_INFO speed_mbps is 0 on a cable");
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		(void)tb5k_link_u64(c->index, counters[i]);
}

/* TB5_IOC_GET_STATS: the counters sysfs shows, read just before it. */
static void check_stats(struct tb5k_ctx *c)
{
	static const char *const drops[TB5_UAPI_DROP_KINDS] = {
		"drops/malformed", "drops/unknown_connection", "drops/out_of_window",
		"drops/ring_overflow", "drops/sequence_gap",
	};
	struct tb5_stats st;
	char name[32];
	int k;

	snprintf(name, sizeof(name), "tb5_%d.stats", c->index);
	memset(&st, 0xff, sizeof(st));
	TB5K_CHECK(!ioctl(c->fd, TB5_IOC_GET_STATS, &st), name,
		   "TB5_IOC_GET_STATS: %s", strerror(errno));
	TB5K_CHECK(!st.reserved[0] && !st.reserved[1] && !st.reserved[2], name,
		   "reserved fields not zero");
	TB5K_CHECK(tb5k_link_u64(c->index, "rx_frames") >= st.rx_frames &&
		   tb5k_link_u64(c->index, "tx_frames") >= st.tx_frames &&
		   tb5k_link_u64(c->index, "errors") >= st.rx_errors, name,
		   "sysfs counts less than the uAPI did before it");
	for (k = 0; k < TB5_UAPI_DROP_KINDS; k++)
		TB5K_CHECK(tb5k_link_u64(c->index, drops[k]) >= st.drops[k], name,
			   "%s below the uAPI's %llu", drops[k],
			   (unsigned long long)st.drops[k]);
	tb5k_pass("%s (TB5_IOC_GET_STATS and sysfs drops/ agree)", name);
}

static void check_end(struct tb5k_ctx *c, const struct tb5_info *info,
		      uint32_t ring_size, int loop)
{
	char name[32], buf[64];
	static const char *const counters[] = {
		"tx_frames", "tx_bytes", "rx_frames", "rx_bytes", "errors",
	};
	size_t i;

	snprintf(name, sizeof(name), "tb5_%d.info", c->index);
	TB5K_CHECK(info->link_index == (uint32_t)c->index, name,
		   "link_index %u", info->link_index);
	TB5K_CHECK(info->state == TB5_STATE_READY, name, "state %u, not READY",
		   info->state);
	TB5K_CHECK(info->ring_size == ring_size, name,
		   "ring_size %u, the module parameter says %u", info->ring_size,
		   ring_size);
	TB5K_CHECK(info->max_frame == TB5_UAPI_FRAME_MAX, name, "max_frame %u",
		   info->max_frame);
	TB5K_CHECK(!(info->features & TB5_FEATURE_LOOP) == !loop, name,
		   "features 0x%x %s TB5_FEATURE_LOOP", info->features,
		   loop ? "lack" : "have");
	TB5K_CHECK(!(info->features & ~(TB5_FEATURE_HOST_MEM | TB5_FEATURE_DMABUF |
					TB5_FEATURE_LOOP | TB5_FEATURE_WELL_KNOWN |
					TB5_FEATURE_STATS)),
		   name, "unknown feature bits 0x%x", info->features);
	TB5K_CHECK(info->features & TB5_FEATURE_STATS, name,
		   "features 0x%x lack TB5_FEATURE_STATS", info->features);
	TB5K_CHECK(!info->reserved[0] && !info->reserved[1], name,
		   "reserved fields not zero");
	tb5k_pass("%s", name);
	check_stats(c);

	snprintf(name, sizeof(name), "tb5_%d.sysfs", c->index);
	TB5K_CHECK(!tb5k_link_text(c->index, "state", buf, sizeof(buf)), name,
		   "no state attribute");
	TB5K_CHECK(!strcmp(buf, "ready"), name, "state \"%s\"", buf);
	TB5K_CHECK(tb5k_link_u64(c->index, "ring_size") == ring_size, name,
		   "ring_size attribute is not %u", ring_size);
	TB5K_CHECK(tb5k_link_u64(c->index, "speed_mbps") == info->speed_mbps,
		   name, "speed_mbps attribute differs from GET_INFO's %u",
		   info->speed_mbps);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		(void)tb5k_link_u64(c->index, counters[i]);
	TB5K_CHECK(!tb5k_link_text(c->index, "backend", buf, sizeof(buf)), name,
		   "no backend attribute");
	TB5K_CHECK(!strcmp(buf, loop ? "loop" : "tb"), name,
		   "backend \"%s\"", buf);
	if (loop) {
		TB5K_CHECK(!tb5k_link_text(c->index, "plugged", buf, sizeof(buf)),
			   name, "no plugged attribute on a loop end");
		TB5K_CHECK(!strcmp(buf, "1"), name, "plugged reads \"%s\"", buf);
	} else {
		check_tb_attrs(c, info, name);
	}
	tb5k_pass("%s", name);
}

static void check_peer(struct tb5k_ctx *c, const struct tb5_info *mine,
		       const struct tb5_info *other, int other_index)
{
	char name[32], buf[64], *end;
	unsigned long long v;

	snprintf(name, sizeof(name), "tb5_%d.peer_id", c->index);
	TB5K_CHECK(mine->peer_host == other->local_host, name,
		   "GET_INFO peer_host 0x%llx, but tb5_%d's local_host is 0x%llx",
		   (unsigned long long)mine->peer_host, other_index,
		   (unsigned long long)other->local_host);
	TB5K_CHECK(!tb5k_link_text(c->index, "peer_id", buf, sizeof(buf)), name,
		   "no peer_id attribute");
	errno = 0;
	v = strtoull(buf, &end, 16);
	TB5K_CHECK(!errno && end != buf && !*end && !strncmp(buf, "0x", 2), name,
		   "peer_id reads \"%s\", not 0x<hex>", buf);
	TB5K_CHECK(v == other->local_host, name,
		   "sysfs peer_id %s, but tb5_%d reports host id 0x%llx", buf,
		   other_index, (unsigned long long)other->local_host);
	tb5k_pass("%s", name);
}

/* One end of a tb link: its peer is on another host. */
static int tb_end(int n, uint32_t ring_size)
{
	char name[32], buf[64], *end;
	struct tb5_info info;
	struct tb5k_ctx c;
	unsigned long long v;

	tb5k_open(&c, n, 0);
	TB5K_CHECK(c.version.features & TB5_FEATURE_HOST_MEM, "version",
		   "features 0x%x lack TB5_FEATURE_HOST_MEM", c.version.features);
	tb5k_pass("version");
	tb5k_get_info(&c, &info);
	tb5k_note("tb5_%d: host 0x%llx peer 0x%llx state %u speed %u Mbps", n,
		  (unsigned long long)info.local_host,
		  (unsigned long long)info.peer_host, info.state,
		  info.speed_mbps);
	check_end(&c, &info, ring_size, 0);

	snprintf(name, sizeof(name), "tb5_%d.peer_id", n);
	TB5K_CHECK(info.peer_host && info.peer_host != info.local_host, name,
		   "peer_host 0x%llx (this host is 0x%llx)",
		   (unsigned long long)info.peer_host,
		   (unsigned long long)info.local_host);
	TB5K_CHECK(!tb5k_link_text(n, "peer_id", buf, sizeof(buf)), name,
		   "no peer_id attribute");
	errno = 0;
	v = strtoull(buf, &end, 16);
	TB5K_CHECK(!errno && end != buf && !*end && v == info.peer_host, name,
		   "sysfs peer_id %s, GET_INFO's peer_host 0x%llx", buf,
		   (unsigned long long)info.peer_host);
	tb5k_pass("%s", name);
	tb5k_close(&c);
	return 0;
}

int main(int argc, char **argv)
{
	struct tb5k_ctx a, b;
	struct tb5_info ia, ib;
	uint32_t ring_size;
	int na, nb;

	tb5k_init("info", 60);
	if (argc == 3 && !strcmp(argv[1], "--tb"))
		return tb_end(atoi(argv[2]),
			      (uint32_t)tb5k_read_u64("params",
						      TB5K_SYSFS_PARAMS "/ring_size"));
	if (argc != 3) {
		fprintf(stderr, "usage: %s A B  (the two ends of a loop pair)\n"
			"       %s --tb N  (one end of a tb link)\n",
			argv[0], argv[0]);
		return 2;
	}
	na = atoi(argv[1]);
	nb = atoi(argv[2]);
	ring_size = (uint32_t)tb5k_read_u64("params",
					    TB5K_SYSFS_PARAMS "/ring_size");

	tb5k_open(&a, na, 0);
	tb5k_open(&b, nb, 0);
	TB5K_CHECK(a.version.features & TB5_FEATURE_HOST_MEM, "version",
		   "features 0x%x lack TB5_FEATURE_HOST_MEM", a.version.features);
	TB5K_CHECK(!a.version.reserved, "version", "reserved is %u",
		   a.version.reserved);
	TB5K_CHECK(!memcmp(&a.version, &b.version, sizeof(a.version)), "version",
		   "the two ends report different versions");
	tb5k_note("module %u.%u.%u, ABI %u, features 0x%x",
		  a.version.module_major, a.version.module_minor,
		  a.version.module_patch, a.version.abi_version,
		  a.version.features);
	tb5k_pass("version");

	tb5k_get_info(&a, &ia);
	tb5k_get_info(&b, &ib);
	tb5k_note("tb5_%d: host 0x%llx peer 0x%llx state %u speed %u Mbps", na,
		  (unsigned long long)ia.local_host,
		  (unsigned long long)ia.peer_host, ia.state, ia.speed_mbps);
	tb5k_note("tb5_%d: host 0x%llx peer 0x%llx state %u speed %u Mbps", nb,
		  (unsigned long long)ib.local_host,
		  (unsigned long long)ib.peer_host, ib.state, ib.speed_mbps);
	check_end(&a, &ia, ring_size, 1);
	check_end(&b, &ib, ring_size, 1);
	check_peer(&a, &ia, &ib, nb);
	check_peer(&b, &ib, &ia, na);

	/* Two cheap negative checks: a NULL argument and an unknown command. */
	TB5K_CHECK(ioctl(a.fd, TB5_IOC_GET_INFO, NULL) == -1 && errno == EFAULT,
		   "bad-args", "GET_INFO(NULL) did not fail with EFAULT (%s)",
		   tb5k_errname(errno));
	TB5K_CHECK(ioctl(a.fd, _IO(TB5_IOC_MAGIC, 0x7f), NULL) == -1 &&
		   errno == ENOTTY, "bad-args",
		   "an unknown command did not fail with ENOTTY (%s)",
		   tb5k_errname(errno));
	tb5k_pass("bad-args");

	tb5k_close(&a);
	tb5k_close(&b);
	return 0;
}
