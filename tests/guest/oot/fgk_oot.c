// SPDX-License-Identifier: GPL-2.0
/*
 * fgk_oot: an out-of-tree module for the fgk tests, built against the
 * test kernel's tree with `make -C <tree> M=<dir>`.  Built with the tree's
 * flags (-ffunction-sections under CONFIG_FG_KASLR), so its .text.*
 * sections are shuffled at load like those of in-tree modules.  Writing 1
 * to /sys/module/fgk_oot/parameters/warn WARNs from fgk_oot_check(),
 * inlined into fgk_oot_warn(), called from fgk_oot_fire().
 */
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool fgk_oot_warn_on;

static __always_inline bool fgk_oot_check(int x)
{
	return WARN(x > 0, "fgk_oot: WARN on request\n");
}

static noinline int fgk_oot_warn(int x)
{
	return fgk_oot_check(x) ? x : 0;
}

static noinline int fgk_oot_fire(int x)
{
	int r = fgk_oot_warn(x);

	barrier();
	return r;
}

static noinline int fgk_oot_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (!ret && *(bool *)kp->arg && THIS_MODULE->state == MODULE_STATE_LIVE)
		fgk_oot_fire(1);
	return ret;
}

static const struct kernel_param_ops fgk_oot_ops = {
	.set = fgk_oot_set,
	.get = param_get_bool,
};
module_param_cb(warn, &fgk_oot_ops, &fgk_oot_warn_on, 0600);

static int __init fgk_oot_init(void)
{
	pr_info("fgk_oot: loaded\n");
	return 0;
}

static void __exit fgk_oot_exit(void)
{
}

module_init(fgk_oot_init);
module_exit(fgk_oot_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fgk test: an out-of-tree module");
