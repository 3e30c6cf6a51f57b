"""How the console shows opaque bytes (payloads, results): the rendering lives in ``queues.rendering``, shared with
the Django admin's task view."""

from queues.rendering import MAX_FULL_BYTES, PREVIEW_CHARS, RenderedBytes, hex_dump, preview, render_bytes

__all__ = ["MAX_FULL_BYTES", "PREVIEW_CHARS", "RenderedBytes", "hex_dump", "preview", "render_bytes"]
