# dump: QEMU's vmcoreinfo device and a QMP socket (--qmp PATH, default beside
# the log), so `dump-guest-memory` writes an ELF dump that carries the guest's
# VMCOREINFO note.  The kernel has no ACPI, so the fw_cfg device is described
# on the command line (x86 I/O ports 0x510-0x51b).
DESCRIPTION=-device vmcoreinfo + QMP socket for dump-guest-memory
APPEND=qemu_fw_cfg.ioport=0xc@0x510
QEMU_ARGS=-device vmcoreinfo
QMP=yes
TIMEOUT=300
