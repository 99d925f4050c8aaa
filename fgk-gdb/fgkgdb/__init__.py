"""fgk-gdb: gdb commands for FG-KASLR kernels (see docs/fgk-gdb.md).

``core`` is plain Python (no gdb); ``commands`` registers the gdb commands.
``load()`` registers them once (sourcing the loader twice is harmless).
"""


def load():
    from . import commands
    commands.register()
