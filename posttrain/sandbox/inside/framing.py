"""Length-prefixed frames between host and fork-server: a JSON header plus a binary payload."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!II")  # json length, payload length
MAX_FRAME = 1 << 30


def encode_frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame as bytes: a JSON header and an opaque binary payload. Raises TypeError
    (or ValueError) for a header JSON cannot carry or a payload that is not bytes-like."""
    body = json.dumps(header).encode()
    return _HEADER.pack(len(body), len(payload)) + body + payload


def send_frame(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    """Write one frame: a JSON header and an opaque binary payload."""
    sock.sendall(encode_frame(header, payload))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(min(n - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("sandbox channel closed")
        chunks += chunk
    return bytes(chunks)


def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> tuple[dict[str, Any], bytes]:
    """Read one frame; EOFError when the other side is gone or announces more than
    `limit` bytes (nothing of it is read then)."""
    n_json, n_payload = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if n_json + n_payload > limit:
        raise EOFError(f"frame of {n_json + n_payload} bytes exceeds the {limit} cap")
    header = json.loads(_recv_exact(sock, n_json))
    return header, _recv_exact(sock, n_payload) if n_payload else b""
