"""fgkqmp: QEMU's QMP, enough for dump-guest-memory and friends (see fgkrun)."""

from __future__ import annotations

import json
import socket


def qmp_command(path, command: str, timeout: float = 120.0, **arguments):
    """Connect to a QMP unix socket, run one command, return its 'return'."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(path))
    f = s.makefile("rwb")

    def recv():
        while True:
            line = f.readline()
            if not line:
                raise RuntimeError("QMP connection closed")
            msg = json.loads(line)
            if "event" in msg:
                continue
            return msg

    def send(cmd, args=None):
        msg = {"execute": cmd}
        if args:
            msg["arguments"] = args
        f.write(json.dumps(msg).encode() + b"\n")
        f.flush()
        return recv()

    try:
        recv()                                  # greeting
        send("qmp_capabilities")
        reply = send(command, arguments)
        if "error" in reply:
            raise RuntimeError(f"QMP {command}: {reply['error'].get('desc')}")
        return reply.get("return")
    finally:
        s.close()
