# SPDX-License-Identifier: GPL-2.0
# fgk-gdb, installed: gdb imports every module of <data-directory>/python/
# gdb/command/ when it starts (gdb/__init__.py, _auto_load_packages), so the
# `fgk` commands (fgk attach, fgk info, ...) exist in every gdb session with
# no `source` line and no auto-load safe-path setting.  `make install`
# substitutes where the fgkgdb package went.  From a checkout, use
# `source fgk-gdb/fgk.py` instead.
import sys

_FGKGDB_DIR = "@FGKGDB_DIR@"
if _FGKGDB_DIR not in sys.path:
    sys.path.insert(0, _FGKGDB_DIR)

import fgkgdb  # noqa: E402

fgkgdb.load()
