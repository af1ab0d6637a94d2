"""The S1 framed byte stream, shared by echo_server.py and echo_client.py.

A frame is CODE (one ASCII byte: N, T, U or I) + SIZE (seven ASCII decimal digits, zero-filled,
the body length in bytes) + BODY. Frames are carried as a plain byte stream: one write or
notification may hold part of a frame, or the end of one frame and the start of the next.

`Reassembler.feed` consumes each chunk exactly once (the header is at most 8 bytes and body
bytes are appended to a list of slices, joined once per frame), so reassembly is linear in the
number of bytes received however the stream is split.
"""
from __future__ import annotations

from dataclasses import dataclass

CODES = b"NTUI"
HEADER_SIZE = 8
SIZE_DIGITS = 7
MAX_SIZE = 9_999_999  # the largest body seven decimal digits can describe
DEFAULT_LIMIT = 4 * 1024 * 1024


class FrameError(Exception):
    """A malformed header (unknown code, non-digit size, size over the limit)."""


@dataclass
class Frame:
    code: str  # "N", "T", "U" or "I"
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def encode(code: str, body: bytes = b"") -> bytes:
    if len(code) != 1 or code.encode("ascii") not in CODES:
        raise ValueError(f"unknown frame code {code!r}")
    if len(body) > MAX_SIZE:
        raise ValueError(f"body of {len(body)} bytes does not fit in {SIZE_DIGITS} digits")
    return code.encode("ascii") + f"{len(body):0{SIZE_DIGITS}d}".encode("ascii") + bytes(body)


def check_partial_header(header: bytes) -> None:
    """Reject a header as soon as one of its bytes is wrong, without waiting for all eight."""
    if header and header[0] not in CODES:
        raise FrameError(f"unknown frame code 0x{header[0]:02x} (expected N, T, U or I)")
    digits = header[1:HEADER_SIZE]
    if not all(0x30 <= b <= 0x39 for b in digits):
        shown = bytes(digits).decode("ascii", errors="backslashreplace")
        raise FrameError(f"frame size '{shown}' is not {SIZE_DIGITS} ASCII decimal digits")


def parse_header(header: bytes, limit: int) -> tuple[str, int]:
    check_partial_header(header)
    code = header[0]
    size = int(bytes(header[1:HEADER_SIZE]).decode("ascii"))
    if size > limit:
        raise FrameError(f"frame size {size} is over the limit of {limit} bytes")
    return chr(code), size


class Reassembler:
    """Incremental frame parser.

    `feed` returns what the chunk completed, in stream order: Frame objects, and a FrameError
    for a malformed header. After an error the buffer is reset and the rest of that chunk is
    discarded; parsing starts again with the next chunk (a fresh header)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.reset()

    def reset(self) -> None:
        self._header = bytearray()
        self._code: str | None = None
        self._remaining = 0
        self._parts: list[bytes] = []
        self._body = 0  # bytes in _parts

    @property
    def buffered(self) -> int:
        """Bytes of the current, unfinished frame held so far."""
        return len(self._header) + self._body

    def feed(self, chunk: bytes) -> list[Frame | FrameError]:
        frames: list[Frame | FrameError] = []
        view = memoryview(bytes(chunk))
        offset = 0
        while offset < len(view):
            if self._code is None:
                take = min(HEADER_SIZE - len(self._header), len(view) - offset)
                self._header += view[offset:offset + take]
                offset += take
                try:
                    if len(self._header) < HEADER_SIZE:
                        check_partial_header(bytes(self._header))
                        break
                    self._code, self._remaining = parse_header(bytes(self._header), self.limit)
                except FrameError as error:
                    self.reset()
                    frames.append(error)
                    return frames
                self._header.clear()
            take = min(self._remaining, len(view) - offset)
            if take:
                self._parts.append(bytes(view[offset:offset + take]))
                self._body += take
                offset += take
                self._remaining -= take
            if self._remaining == 0:
                frames.append(Frame(self._code, b"".join(self._parts)))
                self._code = None
                self._parts = []
                self._body = 0
        return frames


def split(data: bytes, size: int) -> list[bytes]:
    """Cut `data` into chunks of at most `size` bytes (at least one chunk, possibly empty)."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]
