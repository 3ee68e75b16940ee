// SPDX-License-Identifier: MIT
/*
 * tb5k-dmabuf - TB5_IOC_REG_DMABUF with a real dma-buf from /dev/udmabuf.
 *
 *   tb5k-dmabuf [--one N]
 *
 * SKIPs (exit 0) where /dev/udmabuf does not exist (Debian 12's 6.1 kernel
 * has no CONFIG_UDMABUF). Otherwise: a memfd sealed against shrinking
 * becomes a dma-buf (UDMABUF_CREATE); registration of good ranges succeeds,
 * and an unaligned offset, ranges outside the buffer or wrapping 2^64, a
 * zero length, non-zero flags or pad, and fds that are not dma-bufs are
 * refused. Then, with the dma-buf fd already closed (the registration holds
 * it), a message sent from host memory lands in the dma-buf and is verified
 * through the memfd mapping, and one sent from another dma-buf lands in
 * host memory; nothing outside the posted ranges changes.
 *
 * --one N: the feature and the validation on one link end, /dev/tb5_N,
 * whose peer is another host (a tb link on the emulated fabric, where
 * every registration is also mapped for the NHI); then a registration
 * that outlives its fd and is deregistered. Data from a dma-buf over a tb
 * link is tb5-perf --memory udmabuf's (vm-tests-fabric.sh).
 */
#include "tb5k.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/udmabuf.h>)
#include <linux/udmabuf.h>
#define HAVE_UDMABUF 1
#endif
#endif

#define SZ		(4 * TB5K_MIB)
#define UNTOUCHED	0xee
#define WAIT_MS		60000

#ifdef HAVE_UDMABUF
/* A memfd of @size bytes (filled with @byte), its mapping and a dma-buf. */
static int make_dmabuf(size_t size, uint8_t byte, int *memfd, uint8_t **map)
{
	struct udmabuf_create c;
	int u, fd;

	*memfd = memfd_create("tb5k-dmabuf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	TB5K_CHECK(*memfd >= 0, "setup", "memfd_create: %s", strerror(errno));
	TB5K_CHECK(!ftruncate(*memfd, (off_t)size), "setup", "ftruncate: %s",
		   strerror(errno));
	TB5K_CHECK(!fcntl(*memfd, F_ADD_SEALS, F_SEAL_SHRINK), "setup",
		   "F_ADD_SEALS: %s", strerror(errno));
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *memfd, 0);
	TB5K_CHECK(*map != MAP_FAILED, "setup", "mmap of the memfd: %s",
		   strerror(errno));
	memset(*map, byte, size);
	u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	TB5K_CHECK(u >= 0, "setup", "open /dev/udmabuf: %s", strerror(errno));
	memset(&c, 0, sizeof(c));
	c.memfd = (uint32_t)*memfd;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.offset = 0;
	c.size = size;
	fd = ioctl(u, UDMABUF_CREATE, &c);
	TB5K_CHECK(fd >= 0, "setup", "UDMABUF_CREATE: %s", strerror(errno));
	close(u);
	return fd;
}

static int reg_dmabuf(struct tb5k_ctx *c, int fd, uint64_t offset, uint64_t len,
		      uint32_t flags, uint32_t pad, uint32_t *handle)
{
	struct tb5_reg_dmabuf r;

	memset(&r, 0, sizeof(r));
	r.fd = fd;
	r.flags = flags;
	r.offset = offset;
	r.len = len;
	r.pad = pad;
	if (ioctl(c->fd, TB5_IOC_REG_DMABUF, &r))
		return -errno;
	if (handle)
		*handle = r.handle;
	return 0;
}

static void expect_good(struct tb5k_ctx *c, int fd, uint64_t off, uint64_t len)
{
	uint32_t h;
	int ret = reg_dmabuf(c, fd, off, len, 0, 0, &h);

	TB5K_CHECK(!ret, "validate", "offset %llu len %llu of a %llu-byte dma-buf "
		   "refused: %s", (unsigned long long)off, (unsigned long long)len,
		   (unsigned long long)SZ, tb5k_errname(ret));
	ret = tb5k_dereg(c, h);
	TB5K_CHECK(!ret, "validate", "deregistering it: %s", tb5k_errname(ret));
}

static void expect_bad(struct tb5k_ctx *c, int fd, uint64_t off, uint64_t len,
		       uint32_t flags, uint32_t pad, const char *what, int alt)
{
	uint32_t h;
	int ret = reg_dmabuf(c, fd, off, len, flags, pad, &h);

	if (!ret)
		tb5k_dereg(c, h);
	TB5K_CHECK(ret == -EINVAL || (alt && ret == -alt), "validate",
		   "%s: %s, wanted EINVAL%s%s", what,
		   ret ? tb5k_errname(ret) : "accepted", alt ? " or " : "",
		   alt ? tb5k_errname(alt) : "");
}

/*
 * What REG_DMABUF accepts and refuses on @b, with a @SZ-byte dma-buf @dbuf
 * made from @memfd.
 */
static void validate(struct tb5k_ctx *b, int dbuf, int memfd)
{
	uint32_t h_b;
	int null_fd, ret;

	expect_good(b, dbuf, 0, SZ);
	expect_good(b, dbuf, 4096, SZ - 4096);
	expect_good(b, dbuf, SZ - 4096, 4096);
	expect_good(b, dbuf, 8192, 1);
	expect_bad(b, dbuf, 1, 4096, 0, 0, "offset 1 (unaligned)", 0);
	expect_bad(b, dbuf, 2048, 4096, 0, 0, "offset 2048 (unaligned)", 0);
	expect_bad(b, dbuf, 4095, 1, 0, 0, "offset 4095 (unaligned)", 0);
	expect_bad(b, dbuf, 0, SZ + 1, 0, 0, "len one past the end", 0);
	expect_bad(b, dbuf, SZ, 4096, 0, 0, "offset at the end", 0);
	expect_bad(b, dbuf, SZ - 4096, 8192, 0, 0, "range across the end", 0);
	expect_bad(b, dbuf, 2 * SZ, 4096, 0, 0, "offset beyond the end", 0);
	expect_bad(b, dbuf, 0, 0, 0, 0, "len 0", 0);
	expect_bad(b, dbuf, ~0ull & ~4095ull, 8192, 0, 0,
		   "offset + len wrapping 2^64", 0);
	expect_bad(b, dbuf, 4096, ~0ull, 0, 0, "len 2^64 - 1", 0);
	expect_bad(b, dbuf, 0, 4096, 1, 0, "flags 1", 0);
	expect_bad(b, dbuf, 0, 4096, 0, 1, "pad 1", 0);
	expect_bad(b, -1, 0, 4096, 0, 0, "fd -1", EBADF);
	expect_bad(b, 1 << 20, 0, 4096, 0, 0, "an unopened fd", EBADF);
	expect_bad(b, memfd, 0, 4096, 0, 0, "a memfd (not a dma-buf)", EBADF);
	expect_bad(b, b->fd, 0, 4096, 0, 0, "the tb5 fd itself", EBADF);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	expect_bad(b, null_fd, 0, 4096, 0, 0, "/dev/null", EBADF);
	close(null_fd);
	ret = reg_dmabuf(b, dbuf, 0, 4097, 0, 0, &h_b);
	tb5k_note("a length that is not a page multiple (4097): %s",
		  ret ? tb5k_errname(ret) : "accepted");
	if (!ret)
		tb5k_dereg(b, h_b);
	tb5k_pass("validate (good ranges accepted; unaligned, out-of-range, "
		  "wrapping, zero-length, flags, pad, non-dma-buf fds refused)");
}

/* Send @len bytes from (sc, smem, soff) to (rc, rmem, roff); both complete. */
static void transfer(const char *name, struct tb5k_ctx *sc, uint32_t sep,
		     uint32_t smem, uint64_t soff, struct tb5k_ctx *rc,
		     uint32_t rep, uint32_t rmem, uint64_t roff, uint64_t len,
		     int try_dereg)
{
	struct tb5_cqe cqe;
	int ret;

	ret = tb5k_post1(rc, TB5_OP_RECV, rep, rmem, 1, roff, len, 0x1);
	TB5K_CHECK(!ret, name, "post recv: %s", tb5k_errname(ret));
	if (try_dereg) {
		ret = tb5k_dereg(rc, rmem);
		TB5K_CHECK(ret == -EBUSY, name, "deregistering a dma-buf region "
			   "with a posted receive: %s, wanted EBUSY",
			   tb5k_errname(ret));
	}
	ret = tb5k_post1(sc, TB5_OP_SEND, sep, smem, 1, soff, len, 0x2);
	TB5K_CHECK(!ret, name, "post send: %s", tb5k_errname(ret));
	TB5K_CHECK(tb5k_wait_user_data(rc, 0x1, &cqe, WAIT_MS), name,
		   "the receive did not complete");
	TB5K_CHECK(!cqe.status && cqe.bytes == len && cqe.ep == rep, name,
		   "receive: %s", tb5k_cqe_str(&cqe));
	TB5K_CHECK(tb5k_wait_user_data(sc, 0x2, &cqe, WAIT_MS), name,
		   "the send did not complete");
	TB5K_CHECK(!cqe.status && cqe.bytes == len && cqe.ep == sep, name,
		   "send: %s", tb5k_cqe_str(&cqe));
}

/* --one N: one end of a link whose peer is elsewhere. */
static int one_end(int n)
{
	uint64_t pinned0 = tb5k_pinned_pages();
	struct tb5k_ctx c;
	uint32_t h;
	int memfd, dbuf, ret;
	uint8_t *map;

	tb5k_open(&c, n, 256);
	TB5K_CHECK(c.version.features & TB5_FEATURE_DMABUF, "feature",
		   "the module does not advertise TB5_FEATURE_DMABUF (features "
		   "0x%x)", c.version.features);
	tb5k_pass("feature");
	dbuf = make_dmabuf(SZ, UNTOUCHED, &memfd, &map);
	validate(&c, dbuf, memfd);
	ret = reg_dmabuf(&c, dbuf, 4096, SZ - 4096, 0, 0, &h);
	TB5K_CHECK(!ret, "outlives-fd", "REG_DMABUF: %s", tb5k_errname(ret));
	close(dbuf);
	ret = tb5k_dereg(&c, h);
	TB5K_CHECK(!ret, "outlives-fd", "deregistering after the fd was closed: "
		   "%s", tb5k_errname(ret));
	tb5k_pass("outlives-fd (registered, fd closed, deregistered)");
	tb5k_close(&c);
	munmap(map, SZ);
	close(memfd);
	tb5k_check_pinned_back(pinned0);
	return 0;
}

int main(int argc, char **argv)
{
	struct tb5k_ctx a, b;
	struct tb5k_conn cn;
	int memfd, dbuf, memfd2, dbuf2, ret;
	uint8_t *map, *map2, *host, *host2;
	const uint64_t roff = 4099, len = TB5K_MIB + 5, reg_off = 4096;
	uint32_t h_b, h_a, h_host, h_host2;
	uint64_t pinned0;
	int64_t bad;

	tb5k_init("dmabuf", 600);
	if (argc != 1 && !(argc == 3 && !strcmp(argv[1], "--one"))) {
		fprintf(stderr, "usage: %s [--one N]\n", argv[0]);
		return 2;
	}
	if (access("/dev/udmabuf", F_OK)) {
		tb5k_skip("all", "no /dev/udmabuf in this kernel (no CONFIG_UDMABUF, "
			  "e.g. Debian 12's 6.1)");
		return 0;
	}
	if (argc == 3)
		return one_end(atoi(argv[2]));
	pinned0 = tb5k_pinned_pages();
	tb5k_open(&a, 0, 256);
	tb5k_open(&b, 1, 256);
	TB5K_CHECK(a.version.features & TB5_FEATURE_DMABUF, "feature",
		   "the module does not advertise TB5_FEATURE_DMABUF (features "
		   "0x%x)", a.version.features);
	tb5k_pass("feature");

	dbuf = make_dmabuf(SZ, UNTOUCHED, &memfd, &map);

	validate(&b, dbuf, memfd);

	/* Register, then drop our fd: the registration keeps the dma-buf. */
	ret = reg_dmabuf(&b, dbuf, reg_off, SZ - reg_off, 0, 0, &h_b);
	TB5K_CHECK(!ret, "into-dmabuf", "REG_DMABUF: %s", tb5k_errname(ret));
	close(dbuf);

	tb5k_connect("connect", &a, &b, 0xd3ab, &cn);
	host = tb5k_alloc(len);
	tb5k_fill(host, len, 0xd1, 0);
	h_host = tb5k_reg(&a, host, len);
	transfer("into-dmabuf", &a, cn.ep_l, h_host, 0, &b, cn.ep_c, h_b, roff,
		 len, 1);
	bad = tb5k_verify(map + reg_off + roff, len, 0xd1, 0);
	TB5K_CHECK(bad < 0, "into-dmabuf", "byte %lld differs, seen through the "
		   "memfd", (long long)bad);
	bad = tb5k_verify_byte(map, reg_off + roff, UNTOUCHED);
	TB5K_CHECK(bad < 0, "into-dmabuf", "byte %lld before the receive was "
		   "written", (long long)bad);
	bad = tb5k_verify_byte(map + reg_off + roff + len,
			       SZ - (reg_off + roff + len), UNTOUCHED);
	TB5K_CHECK(bad < 0, "into-dmabuf", "byte %lld after the receive was "
		   "written", (long long)bad);
	tb5k_pass("into-dmabuf (%llu bytes at offset %llu, verified through the "
		  "memfd; dma-buf fd closed before)", (unsigned long long)len,
		  (unsigned long long)(reg_off + roff));

	/* From a dma-buf into host memory. */
	dbuf2 = make_dmabuf(2 * TB5K_MIB, 0, &memfd2, &map2);
	tb5k_fill(map2 + 8192 + 17, len, 0xd2, 0);
	ret = reg_dmabuf(&a, dbuf2, 8192, 2 * TB5K_MIB - 8192, 0, 0, &h_a);
	TB5K_CHECK(!ret, "from-dmabuf", "REG_DMABUF: %s", tb5k_errname(ret));
	host2 = tb5k_alloc(len + 4096);
	memset(host2, UNTOUCHED, len + 4096);
	h_host2 = tb5k_reg(&b, host2, len + 4096);
	transfer("from-dmabuf", &a, cn.ep_l, h_a, 17, &b, cn.ep_c, h_host2, 0, len,
		 0);
	bad = tb5k_verify(host2, len, 0xd2, 0);
	TB5K_CHECK(bad < 0, "from-dmabuf", "byte %lld differs", (long long)bad);
	TB5K_CHECK(tb5k_verify_byte(host2 + len, 4096, UNTOUCHED) < 0,
		   "from-dmabuf", "bytes after the receive were written");
	tb5k_pass("from-dmabuf (%llu bytes)", (unsigned long long)len);

	TB5K_CHECK(!tb5k_dereg(&b, h_b) && !tb5k_dereg(&a, h_a) &&
		   !tb5k_dereg(&a, h_host) && !tb5k_dereg(&b, h_host2), "dereg",
		   "deregistering failed");
	close(dbuf2);
	tb5k_close(&a);
	tb5k_close(&b);
	munmap(map, SZ);
	munmap(map2, 2 * TB5K_MIB);
	close(memfd);
	close(memfd2);
	tb5k_check_pinned_back(pinned0);
	return 0;
}
#else
int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	tb5k_init("dmabuf", 60);
	tb5k_skip("all", "built without <linux/udmabuf.h>");
	return 0;
}
#endif
