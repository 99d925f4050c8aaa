# debug: gdbstub on 127.0.0.1:PORT (--gdb PORT, default 1234); --wait
# starts the guest halted.  Base KASLR off unless --kaslr.  No timeout;
# without --init the guest stays up after printing its basic info.
DESCRIPTION=gdbstub on 127.0.0.1:1234 (--gdb PORT), nokaslr, no timeout
APPEND=nokaslr
GDB=yes
HOLD=yes
TIMEOUT=0
