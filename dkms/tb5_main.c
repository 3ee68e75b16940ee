// SPDX-License-Identifier: GPL-2.0-only
/*
 * tb5_main.c - module parameters, load and unload.
 *
 * Parameters (read-only in /sys/module/tb5/parameters/):
 *   ring_size  descriptors per TX and RX ring: a power of two from 64 to
 *              16384 (default 4096); anything else fails the load
 *   loopback   loop pairs to create (0..16, default 0): each is two link
 *              ends, /dev/tb5_<2k> and /dev/tb5_<2k+1>, wired back to back
 * and the tb backend's (tb5_tb.c), where the kernel has the Thunderbolt bus.
 *
 * Load: the class and device numbers, the loop pairs, then the tb backend
 * (its property directory and service driver: a link per cable that a tb5
 * peer answers on). Unload: the reverse.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/random.h>

#include "tb5_mod.h"

unsigned int tb5_ring_size = TB5_RING_SIZE_DEFAULT;
static unsigned int tb5_loopback;

static int ring_size_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret || !is_power_of_2(v) || v < TB5_RING_SIZE_MIN ||
	    v > TB5_RING_SIZE_MAX) {
		pr_err("ring_size=%s refused: it must be a power of two from %u to %u (64, 128, ..., 16384)\n",
		       val, TB5_RING_SIZE_MIN, TB5_RING_SIZE_MAX);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops ring_size_ops = {
	.set = ring_size_set,
	.get = param_get_uint,
};
module_param_cb(ring_size, &ring_size_ops, &tb5_ring_size, 0444);
MODULE_PARM_DESC(ring_size,
		 "Descriptors per ring: a power of two, 64..16384 (default 4096)");

static int loopback_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret || v > TB5_LOOPBACK_MAX) {
		pr_err("loopback=%s refused: the number of loop pairs must be 0..%u\n",
		       val, TB5_LOOPBACK_MAX);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = v;
	return 0;
}

static const struct kernel_param_ops loopback_ops = {
	.set = loopback_set,
	.get = param_get_uint,
};
module_param_cb(loopback, &loopback_ops, &tb5_loopback, 0444);
MODULE_PARM_DESC(loopback, "Loop pairs to create, 0..16 (default 0)");

static int __init tb5_init(void)
{
	u64 host_base;
	int ret;

	ret = tb5_dev_init();
	if (ret)
		return ret;
	/*
	 * Loop ends stand for distinct hosts: a random base, with the link's
	 * index in the low bits, so that every end has its own id.
	 */
	host_base = get_random_u64() & ~0xffffull;
	ret = tb5_loop_init(tb5_loopback, 0, host_base);
	if (ret)
		goto err_dev_exit;
	ret = tb5_tb_init();
	if (ret)
		goto err_loop_exit;
	pr_info("loaded: version %s, ABI %u, ring_size %u, %u loop pair(s)\n",
		TB5_VERSION_STRING, TB5_ABI_VERSION, tb5_ring_size, tb5_loopback);
	return 0;

err_loop_exit:
	tb5_loop_exit();
err_dev_exit:
	tb5_dev_exit();
	return ret;
}

static void __exit tb5_exit(void)
{
	tb5_tb_exit();
	tb5_loop_exit();
	tb5_dev_exit();
}

module_init(tb5_init);
module_exit(tb5_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("tb5: Thunderbolt 5 / USB4 host-to-host transport for NCCL");
MODULE_AUTHOR("The tb5 authors");
MODULE_VERSION(TB5_VERSION_STRING);
