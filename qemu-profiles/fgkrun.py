"""fgkrun: boot the fgk kernel in QEMU (TCG) and run a script in the guest.

Used by the `qemu-profiles/run` command line tool and, as a module, by the
tests (tests/conftest.py) and other tools (fgkdump.py, bench/, scripts/demo).

The guest is QEMU's pc machine with an initramfs built here from
busybox-static: /init mounts proc, sys, devtmpfs and tmpfs, runs the script
as root and powers the machine off.  The script's output comes back on its
own channel (a virtio serial port), the kernel log on ttyS0; see fgkguest.

This module is the stable interface: it re-exports the public names of the
modules that implement the runner, one concern each, all in qemu-profiles/:

  fgkbase       paths, UsageError, <repo>/python (the libfgk binding) on sys.path,
                private files (0600) and directories (0700): open_private,
                write_private, private_dir, make_private
  fgkseed       seed records: parse_seed_record, read_seed_record,
                format_seed_record (libfgk)
  fgkelf        elf_build_id (libfgk)
  fgkprofiles   Profile, load_profile, list_profiles, profile_path
  fgkinitramfs  the guest's /init and scripts, the cpio writer,
                base_initramfs, overlay_archive
  fgkresult     the output markers, the RC_* exit codes, Result, make_result
  fgkguest      Guest (QEMU process, console thread, gdbstub socket, UEFI
                firmware), run, the QEMU defaults (QEMU, DEFAULT_CPU, ...)
  fgkqmp        qmp_command

Import names from here (``fgkrun.Guest``); to change a module-level setting
(e.g. QEMU), set it on the module that defines it.

Profiles are files ``qemu-profiles/NAME.profile`` of ``KEY=VALUE`` lines, see
boot.profile for the keys.
"""

from __future__ import annotations

from fgkbase import (BUILD, DEFAULT_KERNEL, HERE, INITRAMFS_DIR, REPO,  # noqa: F401
                     PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, PRIVATE_UMASK, RUNS_DIR,
                     UsageError, make_private, open_private, private_dir, write_private)
import libfgk  # noqa: E402,F401  (on sys.path through fgkbase)
from fgkseed import format_seed_record, parse_seed_record, read_seed_record  # noqa: F401
from fgkelf import elf_build_id  # noqa: F401
from fgkprofiles import Profile, list_profiles, load_profile, profile_path  # noqa: F401
from fgkinitramfs import (BASE_FORMAT, DEFAULT_SCRIPT, ETC_FILES, HOLD_SCRIPT,  # noqa: F401
                          INIT_SCRIPT, Cpio, base_initramfs, find_busybox,
                          overlay_archive)
from fgkresult import (FATAL_RE, MARK_BEGIN, MARK_END_RE, RC_GUEST_FAILED,  # noqa: F401
                       RC_TIMEOUT, RC_USAGE, WARN_RE, Result, make_result)
from fgkguest import (BASE_CMDLINE, DEFAULT_CPU, OVMF_CODE, OVMF_VARS, QEMU,  # noqa: F401
                      QEMU_BASE, Guest, run)
from fgkqmp import qmp_command  # noqa: F401
