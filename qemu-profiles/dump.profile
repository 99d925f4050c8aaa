# dump: QEMU's vmcoreinfo device and a QMP socket (--qmp PATH, default beside
# the log), so `dump-guest-memory` writes an ELF dump that carries the guest's
# VMCOREINFO note (the guest finds fw_cfg through ACPI and hands QEMU its
# VMCOREINFO address).
DESCRIPTION=-device vmcoreinfo + QMP socket for dump-guest-memory
QEMU_ARGS=-device vmcoreinfo
QMP=yes
TIMEOUT=300
