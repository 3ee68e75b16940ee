/* SPDX-License-Identifier: MIT */
/*
 * tb5k.h - helpers shared by the VM tests of tb5.ko (tests/kernel/).
 *
 * The tests talk to the module through its uAPI only (dkms/include/uapi/
 * tb5_uapi.h). Every check prints one line, "PASS <name>" or
 * "FAIL <name>: <reason>"; the first failure ends the program with status 1.
 */
#ifndef TB5K_H
#define TB5K_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tb5_uapi.h"

#define TB5K_SYSFS_CLASS	"/sys/class/tb5"
#define TB5K_SYSFS_PARAMS	"/sys/module/tb5/parameters"
#define TB5K_ANY		0xffffffffu	/* matches any endpoint */
#define TB5K_MIB		(1024ull * 1024ull)

/* -- reporting ------------------------------------------------------------ */

/*
 * Name the program (prefix of every check), arm a watchdog of @watchdog_s
 * seconds (0: none) that prints a FAIL line and exits if the program hangs,
 * lift RLIMIT_MEMLOCK and make stdout line-buffered.
 */
void tb5k_init(const char *prog, unsigned int watchdog_s);
void tb5k_pass(const char *name_fmt, ...) __attribute__((format(printf, 1, 2)));
void tb5k_skip(const char *name, const char *reason_fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tb5k_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "FAIL <prog>.<name>: <reason>" and exit(1). */
void tb5k_fail(const char *name, const char *reason_fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* "ENOLINK" for ENOLINK (the negative of a status works too). */
const char *tb5k_errname(int err);
uint64_t tb5k_now_ms(void);

#define TB5K_CHECK(cond, name, ...)				\
	do {							\
		if (!(cond))					\
			tb5k_fail((name), __VA_ARGS__);		\
	} while (0)

/* -- sysfs --------------------------------------------------------------- */

/* Read a small text file, trailing newline removed. 0 or -errno. */
int tb5k_read_text(const char *path, char *buf, size_t size);
/* Write @text to @path. 0 or -errno. */
int tb5k_write_text(const char *path, const char *text);
/* Parse an unsigned decimal or 0x-hex file; fails the check @name if not. */
uint64_t tb5k_read_u64(const char *name, const char *path);
/* /sys/class/tb5/tb5_<n>/<attr> */
void tb5k_link_attr_path(char *buf, size_t size, int n, const char *attr);
uint64_t tb5k_link_u64(int n, const char *attr);
int tb5k_link_text(int n, const char *attr, char *buf, size_t size);
/* Wait until link @n's state attribute reads @state. 0, or -ETIMEDOUT. */
int tb5k_wait_link_state(int n, const char *state, unsigned int timeout_ms);
/* /sys/class/tb5/pinned_pages */
uint64_t tb5k_pinned_pages(void);
/* Wait until pinned_pages == @want; returns the last value read. */
uint64_t tb5k_wait_pinned(uint64_t want, unsigned int timeout_ms);
/* A field of /proc/meminfo in KiB ("MemFree", "MemAvailable"). */
uint64_t tb5k_meminfo_kib(const char *field);

/* -- contexts and the completion queue -------------------------------- */

struct tb5k_ctx {
	int fd;
	int index;			/* <n> of /dev/tb5_<n> */
	struct tb5_version version;
	struct tb5_cq_ring *ring;	/* NULL without a CQ */
	struct tb5_cqe *cqes;
	uint32_t entries;
	uint32_t head;			/* our copy of the consumer index */
	size_t map_size;
	/* Completions taken off the ring but not yet asked for. */
	struct tb5_cqe *stash;
	uint32_t stash_len, stash_cap;
};

/* open("/dev/tb5_<n>"); -1 and errno on failure. */
int tb5k_open_raw(int n);
/*
 * Open /dev/tb5_<n>, check TB5_IOC_GET_VERSION, and, when @cq_entries is not
 * 0, create and map the completion queue. Fails the program on any error.
 */
void tb5k_open(struct tb5k_ctx *c, int n, uint32_t cq_entries);
/* Unmap and close; everything the context owned is freed by the module. */
void tb5k_close(struct tb5k_ctx *c);
void tb5k_get_info(struct tb5k_ctx *c, struct tb5_info *info);

/*
 * Take the next completion (stashed ones first), sleeping in poll() for at
 * most @timeout_ms. 1 when @out was filled, 0 on timeout.
 */
int tb5k_next(struct tb5k_ctx *c, struct tb5_cqe *out, int timeout_ms);
/* Like tb5k_next over several contexts; *@which says whose it is. */
int tb5k_next_multi(struct tb5k_ctx **cs, int n, int *which,
		    struct tb5_cqe *out, int timeout_ms);
/*
 * Wait for an event (op TB5_CQE_EVENT) of kind @event (0: any) on endpoint
 * @ep (TB5K_ANY: any); other completions are stashed for later. 1 or 0.
 */
int tb5k_wait_event(struct tb5k_ctx *c, uint32_t ep, uint16_t event,
		    struct tb5_cqe *out, int timeout_ms);
/* Wait for the completion whose user_data is @user_data; others stashed. */
int tb5k_wait_user_data(struct tb5k_ctx *c, uint64_t user_data,
			struct tb5_cqe *out, int timeout_ms);
/* Put a completion back (it comes out first next time). */
void tb5k_stash(struct tb5k_ctx *c, const struct tb5_cqe *cqe);
/* "op=RECV status=0 bytes=.. tag=.. ep=.. user_data=.." */
const char *tb5k_cqe_str(const struct tb5_cqe *cqe);

/* -- memory ------------------------------------------------------------- */

/* Anonymous, private, zeroed memory; fails the program if it cannot. */
void *tb5k_alloc(size_t len);
void tb5k_free(void *p, size_t len);
/* TB5_IOC_REG_MEM; fails the program on error, returns the handle. */
uint32_t tb5k_reg(struct tb5k_ctx *c, const void *addr, uint64_t len);
/* TB5_IOC_REG_MEM; 0 or -errno, the handle in *@handle. */
int tb5k_try_reg(struct tb5k_ctx *c, const void *addr, uint64_t len,
		 uint32_t *handle);
int tb5k_dereg(struct tb5k_ctx *c, uint32_t handle);

/* -- endpoints and posting -------------------------------------------- */

struct tb5k_conn {
	uint32_t listener;	/* on the listening context */
	uint32_t ep_l;		/* the accepted endpoint, listening side */
	uint32_t ep_c;		/* the connecting endpoint */
	uint64_t cookie;
};

/*
 * Listen for @service on @l, connect from @c (the other end of the same
 * pair), wait for TB5_EVENT_INCOMING, accept, and wait for
 * TB5_EVENT_CONNECTED. Fails the check @name on any error.
 */
void tb5k_connect(const char *name, struct tb5k_ctx *l, struct tb5k_ctx *c,
		  uint64_t service, struct tb5k_conn *conn);
/* The same with an existing listener (and its cookie). */
void tb5k_connect_to(const char *name, struct tb5k_ctx *l, uint32_t listener,
		     uint64_t service, uint64_t cookie, struct tb5k_ctx *c,
		     struct tb5k_conn *conn);
int tb5k_ep_close(struct tb5k_ctx *c, uint32_t ep);
/* TB5_IOC_EP_QUERY; 0 or -errno. */
int tb5k_ep_query(struct tb5k_ctx *c, uint32_t ep, struct tb5_ep_query *q);

/*
 * TB5_IOC_POST of @n operations, in batches of at most TB5_UAPI_POST_MAX.
 * Returns 0 or -errno; *@posted (may be NULL) counts those that went in.
 */
int tb5k_post(struct tb5k_ctx *c, const struct tb5_post_op *ops, uint32_t n,
	      uint32_t *posted);
int tb5k_post1(struct tb5k_ctx *c, uint32_t op, uint32_t ep, uint32_t mem,
	       uint32_t tag, uint64_t offset, uint64_t len, uint64_t user_data);

/* -- data patterns ----------------------------------------------------- */

/* Byte @off of the pattern named by @seed. */
uint8_t tb5k_pattern_byte(uint64_t seed, uint64_t off);
/* buf[i] = byte (@off0 + i) of pattern @seed, for i < @len. */
void tb5k_fill(void *buf, size_t len, uint64_t seed, uint64_t off0);
/* Index of the first byte that differs from the pattern, or -1. */
int64_t tb5k_verify(const void *buf, size_t len, uint64_t seed, uint64_t off0);
/* Index of the first byte that is not @byte, or -1. */
int64_t tb5k_verify_byte(const void *buf, size_t len, uint8_t byte);

/* -- two processes, one per end of a link ------------------------------ */

/*
 * What tb5k-xfer's and tb5k-unplug's two-process modes share: each process
 * holds one end of a link (on its own host, for the tb backend), and the
 * link is their only channel. Side a listens on a well-known service,
 * side b connects until a is there; over that control connection the two
 * meet at barriers that carry a few values each way.
 */

/* 'a' or 'b' for side 0 or 1. */
char tb5k_side_ch(int side);
/* VmLck of this process in kB: what its registrations pin. */
uint64_t tb5k_vmlck_kib(void);
/*
 * Check "pinned": VmLck back to @lck0 kB within 5 s (the module unpins as
 * the last file closes), then PASS.
 */
void tb5k_check_vmlck_back(uint64_t lck0);
/*
 * Check "pinned": /sys/class/tb5/pinned_pages back to @pinned0 within 5 s
 * once everything is closed, then PASS.
 */
void tb5k_check_pinned_back(uint64_t pinned0);
/* TB5_IOC_LISTEN; the cookie (0 for a well-known one) in *@cookie. */
uint32_t tb5k_listen(const char *name, struct tb5k_ctx *c, uint64_t service,
		     uint32_t flags, uint64_t *cookie);
/* TB5_IOC_CONNECT: the new endpoint, or -errno. */
int64_t tb5k_connect_start(struct tb5k_ctx *c, uint64_t service,
			   uint64_t cookie);
/* Wait for @ep's first event: CONNECTED, with nothing else in it. */
void tb5k_connect_wait(const char *name, struct tb5k_ctx *c, uint32_t ep,
		       int timeout_ms, const char *what);
/*
 * Wait up to @timeout_ms for INCOMING on @listener, accept the one
 * connection, and find nobody else waiting. The accepted endpoint.
 */
uint32_t tb5k_accept_one(const char *name, struct tb5k_ctx *l,
			 uint32_t listener, int timeout_ms, const char *what);
/*
 * Connect to @service (cookie 0) on the peer until it listens: refused
 * connects (and ENOLINK, a link that went down again) are retried for
 * @wait_s seconds; each attempt waits @answer_ms for its answer.
 */
uint32_t tb5k_connect_retry(const char *name, struct tb5k_ctx *c,
			    uint64_t service, int wait_s, int answer_ms);

struct tb5k_ctl {
	struct tb5k_ctx *c;
	int me;			/* 0: side a, 1: side b */
	uint32_t ep, mem;	/* the control connection, its region */
	uint8_t *buf;
	uint32_t step;		/* barriers passed */
	int wait_ms;		/* how long a barrier waits for the peer */
};

/*
 * Make the control connection on @c: side a (@me 0) listens on @service
 * (well-known), accepts one connection and closes the listener; side b
 * connects until a listens. Each waits @wait_s seconds for the other;
 * barriers wait @wait_ms.
 */
void tb5k_ctl_meet(const char *name, struct tb5k_ctl *ctl, struct tb5k_ctx *c,
		   int me, uint64_t service, int wait_s, int wait_ms);
/*
 * Meet the peer: both send one control message and receive the other's.
 * When this returns the peer has reached the same barrier (count and
 * name), and @peer_vals (may be NULL) holds its @n (at most 8) values.
 * Other completions that turn up meanwhile are stashed.
 */
void tb5k_ctl_barrier(const char *name, struct tb5k_ctl *ctl,
		      const uint64_t *vals, uint32_t n, uint64_t *peer_vals);
/* Deregister and free the control region (the endpoint is the caller's). */
void tb5k_ctl_release(const char *name, struct tb5k_ctl *ctl);

#endif /* TB5K_H */
