# boot: a normal boot with a fresh random layout (no fgkaslr_seed=, base
# KASLR on).
#
# Profile keys (KEY=VALUE, '#' comments):
#   DESCRIPTION   one line for `run --help`
#   APPEND        added to the kernel command line
#                 (after "console=ttyS0 panic=-1", before --seed/--append)
#   QEMU_ARGS     extra QEMU arguments (shell words)
#   REQUIRE_SEED  yes: refuse to run without --seed / --seed-file
#   GDB           yes: start the gdbstub (port from --gdb, default 1234)
#   QMP           yes: QMP unix socket (--qmp PATH, default beside the log)
#   HOLD          yes: without --init, keep the guest up after the default
#                 script (for gdb)
#   TIMEOUT       default --timeout in seconds (0: none)
#   KDUMP         yes: a real kdump (fgkkdump.py): the runner loads a capture
#                 kernel before the script, which then crashes the guest, and
#                 --dump-dir DIR receives the capture's makedumpfile files
DESCRIPTION=random layout, base KASLR on
APPEND=
TIMEOUT=120
