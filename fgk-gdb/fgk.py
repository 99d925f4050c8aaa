# fgk-gdb loader: `source fgk-gdb/fgk.py` in gdb adds the `fgk` commands
# (fgk attach, fgk info, fgk addr, fgk modules).  See docs/fgk-gdb.md.
#
# fgk-gdb reaches libfgk through the libfgk Python package, found here and
# nowhere else: <repo>/python (next to this directory), which loads
# <repo>/build/lib/libfgk.so.1 (`make tools`; $FGK_LIBFGK overrides).  A gdb
# that has only the repository and a built build/ is enough.
# Installed (make install, the fgk-gdb package), gdb loads the commands at
# startup with no `source` line: fgk-gdb/gdb-command-fgk.py goes into gdb's
# data directory, python/gdb/command/ (docs/building.md, "Installing").
import os
import sys

_dir = os.path.dirname(os.path.abspath(__file__))
for _p in (_dir, os.path.join(os.path.dirname(_dir), "python")):
    if os.path.isdir(_p) and _p not in sys.path:
        sys.path.insert(0, _p)

import fgkgdb  # noqa: E402

fgkgdb.load()
