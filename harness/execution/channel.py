"""Length-prefixed pickled messages over a pair of pipes between a supervisor and its case worker."""
from __future__ import annotations

import os
import pickle
import select
import struct

_HEADER = struct.Struct("!Q")


class ChannelClosed(EOFError):
    """The other end went away (its process died or closed the pipe)."""


class Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def send(self, message) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_HEADER.pack(len(data)) + data)
        try:
            while view:
                view = view[os.write(self.write_fd, view):]
        except (BrokenPipeError, OSError) as e:
            raise ChannelClosed(str(e)) from None

    def ready(self, timeout: float | None) -> bool:
        """True when a message (or the end of the pipe) can be read within `timeout` seconds."""
        readable, _, _ = select.select([self.read_fd], [], [], timeout)
        return bool(readable)

    def recv(self):
        (size,) = _HEADER.unpack(self._read(_HEADER.size))
        return pickle.loads(self._read(size))

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = os.read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                raise ChannelClosed("end of pipe")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
