"""fgkprofiles: the QEMU runner's profiles (see fgkrun).

Profiles are files ``qemu-profiles/NAME.profile`` of ``KEY=VALUE`` lines, see
boot.profile for the keys.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from fgkbase import HERE, UsageError


@dataclass


class Profile:
    name: str
    description: str = ""
    append: str = ""            # kernel command line additions
    qemu_args: list = field(default_factory=list)
    require_seed: bool = False
    gdb: bool = False           # start the gdbstub (port: --gdb or 1234)
    qmp: bool = False           # QMP unix socket (path: --qmp or default)
    timeout: float = 120.0
    hold: bool = False          # default script: keep the guest up afterwards
    kdump: bool = False         # real kdump: capture kernel, --dump-dir (fgkkdump)


def profile_path(name: str) -> Path:
    return HERE / f"{name}.profile"


def list_profiles() -> list:
    return sorted(p.stem for p in HERE.glob("*.profile"))


def load_profile(name: str) -> Profile:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
        raise UsageError(f"bad profile name {name!r}")
    path = profile_path(name)
    if not path.is_file():
        raise UsageError(f"unknown profile {name!r} (profiles: {', '.join(list_profiles())})")
    prof = Profile(name)
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        where = f"{path.name}:{lineno}"
        if not sep:
            raise UsageError(f"{where}: expected KEY=VALUE")
        yes = value.lower() in ("1", "yes", "true", "y")
        if key == "DESCRIPTION":
            prof.description = value
        elif key == "APPEND":
            prof.append = value
        elif key == "QEMU_ARGS":
            prof.qemu_args = shlex.split(value)
        elif key == "REQUIRE_SEED":
            prof.require_seed = yes
        elif key == "GDB":
            prof.gdb = yes
        elif key == "QMP":
            prof.qmp = yes
        elif key == "HOLD":
            prof.hold = yes
        elif key == "KDUMP":
            prof.kdump = yes
        elif key == "TIMEOUT":
            prof.timeout = float(value)
        else:
            raise UsageError(f"{where}: unknown key {key}")
    return prof
