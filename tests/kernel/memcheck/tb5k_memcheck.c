// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5k_memcheck.c - a module that does what tb5.ko must never do: it writes
 * @oob bytes past the end of a 64-byte kmalloc() buffer and frees it.
 *
 * It exists to show that the test VMs' kernel memory checking (slub_debug
 * red zones and poisoning, KFENCE where the kernel has it; ci/vm/run.sh)
 * catches such a write: vm-memcheck.sh loads it, and the harness demands
 * the report it must cause. Never loaded anywhere else.
 *
 *   plant=slub    a buffer from the slab (not a KFENCE one): the write lands
 *                 in its right red zone, which kfree() finds overwritten
 *   plant=kfence  a buffer KFENCE sampled (allocations are retried until one
 *                 is): the write hits its guard page or its canary bytes
 *   oob=N         bytes written past the end (default 8, at most 64)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/compiler.h>
#include <linux/jiffies.h>
#include <linux/kfence.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#define BUF_SIZE	64

static char *plant = "slub";
module_param(plant, charp, 0444);
MODULE_PARM_DESC(plant, "slub or kfence: whose buffer the write overruns");

static unsigned int oob = 8;
module_param(oob, uint, 0444);
MODULE_PARM_DESC(oob, "bytes written past the end of the buffer (1..64)");

/*
 * A 64-byte buffer that is (@want_kfence) or is not a KFENCE object. KFENCE
 * samples one allocation per interval, whoever makes it: keep allocating
 * for up to 30 s until one is ours.
 */
static u8 *alloc_buf(bool want_kfence)
{
	unsigned long until = jiffies + 30 * HZ;
	unsigned long tries = 0;
	u8 *p;

	do {
		p = kmalloc(BUF_SIZE, GFP_KERNEL);
		if (!p)
			return NULL;
		tries++;
		if (is_kfence_address(p) == want_kfence) {
			pr_info("a %s buffer after %lu allocation(s)\n",
				want_kfence ? "KFENCE" : "slab", tries);
			return p;
		}
		kfree(p);
		cond_resched();
	} while (time_before(jiffies, until));
	pr_err("no %s buffer in %lu allocations\n",
	       want_kfence ? "KFENCE" : "slab", tries);
	return NULL;
}

static int __init tb5k_memcheck_init(void)
{
	bool kfence = !strcmp(plant, "kfence");
	unsigned int i;
	u8 *buf;

	if ((!kfence && strcmp(plant, "slub")) || !oob || oob > BUF_SIZE)
		return -EINVAL;
	if (kfence && !IS_ENABLED(CONFIG_KFENCE))
		return -EOPNOTSUPP;
	buf = alloc_buf(kfence);
	if (!buf)
		return -EAGAIN;
	/*
	 * A pointer the compiler cannot trace to its allocation, and a
	 * run-time bound: neither it nor FORTIFY_SOURCE sees the overrun.
	 */
	OPTIMIZER_HIDE_VAR(buf);
	for (i = 0; i < BUF_SIZE + oob; i++)
		buf[i] = 0xa5;
	pr_info("wrote %u byte(s) past a %u-byte buffer, freeing it\n", oob,
		BUF_SIZE);
	kfree(buf);
	return 0;
}

static void __exit tb5k_memcheck_exit(void)
{
}

module_init(tb5k_memcheck_init);
module_exit(tb5k_memcheck_exit);
MODULE_DESCRIPTION("tb5 tests: a planted out-of-bounds kmalloc write");
MODULE_LICENSE("GPL");
