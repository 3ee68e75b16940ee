// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_os_linux.c - the transport core's OS shim inside tb5.ko.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "tb5_os.h"

/* Endpoints are ~13 KiB: let large allocations fall back to vmalloc. */
void *tb5_os_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

void tb5_os_free(void *ptr)
{
	kvfree(ptr);
}

struct tb5_os_spinlock *tb5_os_lock_create(void)
{
	struct tb5_os_spinlock *l = kzalloc(sizeof(*l), GFP_KERNEL);

	if (l)
		spin_lock_init(&l->lock);
	return l;
}

void tb5_os_lock_destroy(struct tb5_os_spinlock *l)
{
	kfree(l);
}

/*
 * Ring completions arrive from a work item or, when polled for latency,
 * from softirq context: keep bottom halves off while the lock is held.
 */
void tb5_os_lock(struct tb5_os_spinlock *l)
	__acquires(&l->lock)
{
	spin_lock_bh(&l->lock);
}

void tb5_os_unlock(struct tb5_os_spinlock *l)
	__releases(&l->lock)
{
	spin_unlock_bh(&l->lock);
}

uint64_t tb5_os_now_ns(void)
{
	return ktime_get_ns();
}

uint64_t tb5_os_random_u64(void)
{
	return get_random_u64();
}

void tb5_os_log(enum tb5_os_log_level level, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	switch (level) {
	case TB5_LOG_ERR:
		pr_err_ratelimited("%pV\n", &vaf);
		break;
	case TB5_LOG_WARN:
		pr_warn_ratelimited("%pV\n", &vaf);
		break;
	case TB5_LOG_INFO:
		pr_info("%pV\n", &vaf);
		break;
	default:
		pr_debug("%pV\n", &vaf);
		break;
	}
	va_end(args);
}
