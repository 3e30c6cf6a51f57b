"""A small asyncio WebSocket client (RFC 6455, text frames) for opening hundreds of live-console sockets from one
process: the bench (``bench/live_sockets.py``) and the many-sockets test use it against a real daphne. It
answers pings and reads fragmented and large frames; it sends only masked text and close frames, as a browser
does. Not for production: no TLS, no extensions."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from typing import Any

TEXT, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x8, 0x9, 0xA, 0x0


class Closed(Exception):
    """The server closed the socket; ``code`` is its close code (1005 when it gave none)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"closed by the server ({code})")
        self.code = code


class WebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, host: str, port: int, path: str, headers: dict[str, str]) -> WebSocket:
        """Open and upgrade; raises ``ConnectionError`` with the status line when the server refuses."""
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = (await reader.readline()).decode().strip()
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        if " 101 " not in status + " ":
            writer.close()
            raise ConnectionError(f"handshake refused: {status!r}")
        return cls(reader, writer)

    async def send_json(self, data: Any) -> None:
        await self._send(TEXT, json.dumps(data).encode())

    async def receive_json(self) -> Any:
        return json.loads(await self.receive())

    async def receive(self) -> str:
        """The next text message; pings are answered on the way. Raises ``Closed`` on a close frame."""
        parts: list[bytes] = []
        while True:
            opcode, fin, payload = await self._frame()
            if opcode == PING:
                await self._send(PONG, payload)
            elif opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                raise Closed(code)
            elif opcode in (TEXT, CONTINUATION):
                parts.append(payload)
                if fin:
                    return b"".join(parts).decode()

    async def close(self) -> None:
        try:
            await self._send(CLOSE, struct.pack("!H", 1000))
        except (ConnectionError, RuntimeError):
            pass
        self.writer.close()

    async def _frame(self) -> tuple[int, bool, bytes]:
        head = await self.reader.readexactly(2)
        fin, opcode, length = bool(head[0] & 0x80), head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", await self.reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", await self.reader.readexactly(8))[0]
        mask = await self.reader.readexactly(4) if head[1] & 0x80 else b""
        payload = await self.reader.readexactly(length)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return opcode, fin, payload

    async def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.writer.write(head + mask + masked)
        await self.writer.drain()
