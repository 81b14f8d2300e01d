"""Report stage: one module per output format, each ``render(result) -> str``; no I/O here."""
