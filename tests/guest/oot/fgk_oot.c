// SPDX-License-Identifier: GPL-2.0
/*
 * fgk_oot: an out-of-tree module for the fgk tests, built against the
 * test kernel's tree with `make -C <tree> M=<dir>`.  Built with the tree's
 * flags (-ffunction-sections under CONFIG_FG_KASLR), so its .text.*
 * sections are shuffled at load like those of in-tree modules.  Writing 1
 * to /sys/module/fgk_oot/parameters/warn WARNs from fgk_oot_check(),
 * inlined into fgk_oot_warn(), called from fgk_oot_fire().
 *
 * The other reports a support engineer meets, each from a kthread of its
 * own so that the writer survives:
 *   bug=1      BUG() in fgk_oot_bug_now(): "kernel BUG at", an oops
 *   lockup=N   fgk_oot_spin() spins N seconds with preemption off: a soft
 *              lockup report once N exceeds 2 * kernel.watchdog_thresh
 *   hang=N     fgk_oot_sleep() sleeps N seconds in TASK_UNINTERRUPTIBLE:
 *              a hung-task report once N exceeds
 *              kernel.hung_task_timeout_secs
 */
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>

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

static bool fgk_oot_bug_on;
static unsigned int fgk_oot_lockup_secs;
static unsigned int fgk_oot_hang_secs;

static noinline void fgk_oot_bug_now(void)
{
	BUG();
}

static int fgk_oot_bug_fn(void *unused)
{
	fgk_oot_bug_now();
	return 0;
}

static noinline void fgk_oot_spin(unsigned long secs)
{
	unsigned long end = jiffies + secs * HZ;

	preempt_disable();
	while (time_before(jiffies, end))
		cpu_relax();
	preempt_enable();
}

static int fgk_oot_lockup_fn(void *arg)
{
	fgk_oot_spin((unsigned long)arg);
	barrier();	/* no tail call: this frame stays on the stack */
	return 0;
}

static noinline void fgk_oot_sleep(unsigned long secs)
{
	schedule_timeout_uninterruptible(secs * HZ);
	barrier();
}

static int fgk_oot_hang_fn(void *arg)
{
	fgk_oot_sleep((unsigned long)arg);
	barrier();	/* no tail call: this frame stays on the stack */
	return 0;
}

/* runs fn(arg) in a new kthread NAME once the module is live */
static int fgk_oot_start(int (*fn)(void *), unsigned long arg, const char *name)
{
	struct task_struct *t;

	if (!arg || THIS_MODULE->state != MODULE_STATE_LIVE)
		return 0;
	t = kthread_run(fn, (void *)arg, "%s", name);
	return PTR_ERR_OR_ZERO(t);
}

static int fgk_oot_set_bug(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	return ret ? ret : fgk_oot_start(fgk_oot_bug_fn, *(bool *)kp->arg, "fgk_oot_bug");
}

static int fgk_oot_set_lockup(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	return ret ? ret : fgk_oot_start(fgk_oot_lockup_fn, *(unsigned int *)kp->arg,
					 "fgk_oot_lockup");
}

static int fgk_oot_set_hang(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	return ret ? ret : fgk_oot_start(fgk_oot_hang_fn, *(unsigned int *)kp->arg,
					 "fgk_oot_hang");
}

static const struct kernel_param_ops fgk_oot_bug_ops = {
	.set = fgk_oot_set_bug,
	.get = param_get_bool,
};
module_param_cb(bug, &fgk_oot_bug_ops, &fgk_oot_bug_on, 0600);

static const struct kernel_param_ops fgk_oot_lockup_ops = {
	.set = fgk_oot_set_lockup,
	.get = param_get_uint,
};
module_param_cb(lockup, &fgk_oot_lockup_ops, &fgk_oot_lockup_secs, 0600);

static const struct kernel_param_ops fgk_oot_hang_ops = {
	.set = fgk_oot_set_hang,
	.get = param_get_uint,
};
module_param_cb(hang, &fgk_oot_hang_ops, &fgk_oot_hang_secs, 0600);

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
