# fgk-gdb loader: `source fgk-gdb/fgk.py` in gdb adds the `fgk` commands
# (fgk attach, fgk info, fgk addr, fgk modules).  See docs/fgk-gdb.md.
import os
import sys

_dir = os.path.dirname(os.path.abspath(__file__))
if _dir not in sys.path:
    sys.path.insert(0, _dir)

import fgkgdb  # noqa: E402

fgkgdb.load()
