"""`format_table`: rows as aligned columns, for every table the CLI prints.

Light on purpose (no models), so that `cli/ami_render.py` can use it without loading what
`cli/render.py` loads; `cli/render.py` re-exports it.
"""

from __future__ import annotations

from gpucap.runtime.terminal import escape

__all__ = ["format_table"]


def format_table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns; a cell is padded to the width it has once escaped (a name with
    an escape sequence in it keeps the columns after it aligned)."""
    widths = [max(len(escape(r[i])) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c + " " * (w - len(escape(c))) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]
