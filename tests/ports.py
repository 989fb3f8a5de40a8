"""A local TCP port a test holds for as long as it needs it, which two test runs at once (or a process left over)
cannot take from it.

A port picked by binding port 0, closed and handed to a server later (or kept as "a port nobody listens on") is
free meanwhile: anything that binds port 0 on the machine (another test run's server, Ray's processes) may be
given it, and then the test meets a stranger's server instead of its own, or of none. ``HeldPort`` keeps the port
bound from the start to the end of the test: while no server of the test listens on it a connection is refused (a
server that is down), and a server of the test listens on the same socket (``PlainServer(sock=held.socket())``).
"""

from __future__ import annotations

import socket


class HeldPort:
    """A port on 127.0.0.1 bound by this process until ``close``: connections are refused until a server listens on
    ``socket()``; after that server stopped, ``down()`` refuses them again, and the next server listens on the same
    port. No other socket can bind the port meanwhile.

    How (Linux): the kernel picks the port (port 0) on a first socket; a second binds it by its number (both with
    SO_REUSEADDR and neither listening, which Linux allows) and the first is closed. A port bound by number stays
    bound when its socket stops listening (``shutdown``), where one bound as port 0 would be given back; and with
    SO_REUSEADDR cleared (before the first socket is closed), no other socket may bind beside it."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        for _ in range(10):
            with socket.socket() as first:
                first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                first.bind((host, 0))
                self.port = first.getsockname()[1]
                held = socket.socket()
                held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    held.bind((host, self.port))
                except OSError:   # someone listened on it between the two binds: another port
                    held.close()
                    continue
                # cleared before the first socket goes: from then on no other socket may bind the port
                held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
            self.sock = held
            return
        raise OSError(f"no port on {host} could be held")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def socket(self) -> socket.socket:
        """A socket for a server to listen on and close when it stops (the port stays held)."""
        # SO_REUSEADDR while a server listens (no other socket may listen beside a listening one anyway): the
        # connections it accepts take the flag, and only with it on both sides may the next server listen again
        # while they (or their TIME_WAIT) remain.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return self.sock.dup()

    def down(self) -> None:
        """After the server on ``socket()`` stopped: connections are refused again (the socket was still listening
        here, so they would wait unanswered), and the port is kept."""
        try:
            self.sock.shutdown(socket.SHUT_RD)
        except OSError:   # it was not listening: refused already
            pass
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> HeldPort:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
