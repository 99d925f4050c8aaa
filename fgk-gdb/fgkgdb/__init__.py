"""fgk-gdb: gdb commands for FG-KASLR kernels (see docs/fgk-gdb.md).

``core`` is plain Python (no gdb); ``commands`` registers the gdb commands.
"""
