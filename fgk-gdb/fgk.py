# fgk-gdb loader: `source fgk-gdb/fgk.py` in gdb adds the `fgk` commands
# (fgk attach, fgk info, fgk addr, fgk modules).  See docs/fgk-gdb.md.
import os
import sys

_dir = os.path.dirname(os.path.abspath(__file__))
if _dir not in sys.path:
    sys.path.insert(0, _dir)

import gdb  # noqa: E402

if not getattr(gdb, "_fgk_gdb_loaded", False):
    from fgkgdb import commands  # noqa: E402
    commands.register()
    gdb._fgk_gdb_loaded = True
