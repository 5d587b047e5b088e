"""Length-prefixed pickled messages over a pair of pipes between a supervisor and its case worker.

Objects sent with share() cross the pipe once; later messages refer to them by number. A case
carries its operator's OpSpec, which is most of its pickle: sharing it turns ~4.5 KB per case
into ~0.7 KB, and the worker's unpickling with it. The reference is made by a dispatch-table
entry for the shared objects' types, not by pickle's persistent_id hook: that hook is called
from C for every object of every message (some 130 per case).

Neither side can block the other for good: both may write while the other writes too (the
supervisor sends cases ahead while the worker sends results), and a pipe holds only 64 KB. A
write that finds its pipe full reads whole messages from the other side into an inbox until
the pipe drains; recv() and ready() look in the inbox first.
"""
from __future__ import annotations

import collections
import copyreg
import io
import os
import pickle
import select
import struct

_HEADER = struct.Struct("!Q")


class ChannelClosed(EOFError):
    """The other end went away (its process died or closed the pipe)."""


def _shared(number):
    """Stands for a shared object in a message; the receiving channel resolves it (find_class)."""
    raise RuntimeError("a shared-object reference unpickled outside its channel")


class _Unpickler(pickle.Unpickler):
    def __init__(self, buf, shared: dict):
        super().__init__(buf)
        self.shared = shared

    def find_class(self, module, name):
        if module == __name__ and name == "_shared":
            return self.shared.__getitem__
        return super().find_class(module, name)


class Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd
        self._sent: dict[int, tuple[int, object]] = {}     # id(obj) -> (number, obj): kept alive here
        self._received: dict[int, object] = {}
        self._dispatch = copyreg.dispatch_table.copy()     # + a reducer for each shared object's type
        self._inbox: collections.deque = collections.deque()   # messages read while a write waited
        self._buf = bytearray()                                 # bytes read past the last message
        os.set_blocking(write_fd, False)

    def share(self, obj, limit: int | None = None) -> int | None:
        """Send `obj` once (if not yet sent on this channel); later messages carry a reference.
        For instances of classes: pickle never consults the dispatch table for a dict, list or
        other builtin, so those are sent whole each time (correct, only not shared).
        The bytes written (0: already shared), or None when they would exceed `limit` (not sent)."""
        if id(obj) in self._sent:
            return 0
        number = len(self._sent)
        data = pickle.dumps(("shared", number, obj), protocol=pickle.HIGHEST_PROTOCOL)
        if limit is not None and len(data) > limit:
            return None
        self._write(data)
        self._sent[id(obj)] = (number, obj)
        self._dispatch.setdefault(type(obj), self._reduce)
        return len(data)

    def _reduce(self, obj):
        entry = self._sent.get(id(obj))
        if entry is not None and entry[1] is obj:
            return _shared, (entry[0],)
        return obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)     # an unshared object of a shared type

    def send(self, message, limit: int | None = None) -> int | None:
        """The bytes written, or None when the message would exceed `limit` (then it is not sent)."""
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = self._dispatch
        pickler.dump(message)
        data = buf.getvalue()
        if limit is not None and len(data) > limit:
            return None
        self._write(data)
        return len(data)

    def _write(self, data: bytes) -> None:
        view = memoryview(_HEADER.pack(len(data)) + data)
        try:
            while view:
                try:
                    view = view[os.write(self.write_fd, view):]
                except BlockingIOError:
                    self._wait_writable()
        except (BrokenPipeError, OSError) as e:
            raise ChannelClosed(str(e)) from None

    def _wait_writable(self) -> None:
        """The pipe is full: the other side may itself be blocked writing to us, so drain what
        it sends (whole messages, kept for recv) until ours can take more."""
        readable, writable, _ = select.select([self.read_fd], [self.write_fd], [])
        if readable and not writable:
            self._inbox.append(self._read_message())

    def ready(self, timeout: float | None) -> bool:
        """True when a message (or the end of the pipe) can be read within `timeout` seconds."""
        return bool(wait_any([self], timeout))

    def fileno(self) -> int:
        """The read end, for select() over several channels (wait_any)."""
        return self.read_fd

    def _pending(self) -> bool:
        """A whole message already read: in the inbox, or in the buffer (select() cannot see
        bytes that left the pipe)."""
        return bool(self._inbox) or (len(self._buf) >= _HEADER.size
                                     and len(self._buf) >= _HEADER.size + _HEADER.unpack_from(self._buf)[0])

    def recv(self):
        return self._inbox.popleft() if self._inbox else self._read_message()

    def _read_message(self):
        """The next message; a shared object is registered as it arrives (the messages after it,
        even those read into the inbox, refer to it)."""
        while True:
            (size,) = _HEADER.unpack(self._read(_HEADER.size))
            message = _Unpickler(io.BytesIO(self._read(size)), self._received).load()
            if isinstance(message, tuple) and len(message) == 3 and message[0] == "shared":
                self._received[message[1]] = message[2]
                continue
            return message

    def _read(self, n: int) -> bytes:
        """n bytes. Reads what the pipe holds (up to 1 MB) at once and keeps the rest: a message's
        header and body, and the messages queued behind it, cost one system call, not two each."""
        while len(self._buf) < n:
            chunk = os.read(self.read_fd, max(n - len(self._buf), 1 << 20))
            if not chunk:
                raise ChannelClosed("end of pipe")
            self._buf += chunk
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def wait_any(channels: list[Channel], timeout: float | None) -> list[Channel]:
    """The channels among `channels` with a message (or the end of their pipe) to read, waiting up
    to `timeout` seconds for the first; [] when none came in time."""
    ready = [c for c in channels if c._pending()]
    if ready:
        return ready
    readable, _, _ = select.select(channels, [], [], timeout)
    return readable
