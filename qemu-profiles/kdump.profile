# kdump: real kdump in the guest.  1 GiB of RAM with 256 MiB reserved for a
# capture kernel (crashkernel=), which the guest script loads with Debian's
# `kexec -p` (qemu-profiles/fgkkdump.py builds the capture initramfs: Debian's
# makedumpfile saves /proc/vmcore, -c and -l, -d 31, onto a virtio disk the
# runner reads back).  oops=panic: an oops goes to the capture kernel.
#   qemu-profiles/run kdump --dump-dir D [--init SCRIPT]
# loads the capture kernel, runs SCRIPT (default: echo c > /proc/sysrq-trigger)
# and leaves D/vmcore.kdump-c and D/vmcore.kdump-l.
DESCRIPTION=1 GiB RAM, crashkernel=256M, for kexec -p and makedumpfile
APPEND=crashkernel=256M oops=panic
QEMU_ARGS=-m 1024M
TIMEOUT=400
KDUMP=yes
