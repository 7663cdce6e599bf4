#!/usr/bin/env python3
"""Rewrites the table in docs/SETTINGS.md from src/common/settings_table.inc (run after adding a setting)."""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
table = (root / "src/common/settings_table.inc").read_text()
rows = []
for m in re.finditer(r'^BRAID_SETTING\((\w+),\s*(\w+),\s*(.*?),\s*"(.*)"\)\s*$', table, re.M):
    field, typ, default, desc = m.groups()
    default = default.strip()
    if default == '""':
        default = "(empty)"
    if typ == "Choice":
        allowed = default.strip('"').split("|")
        default = allowed[0]
        desc += " One of: " + ", ".join(f"`{a}`" for a in allowed) + "; any other value is refused with a warning and the default kept."
    rows.append(f"| `BRAID_{field.upper()}` | {typ.lower()} | `{default.strip(chr(34))}` | {desc} |")
doc = root / "docs/SETTINGS.md"
text = doc.read_text()
head = text.split("| variable |")[0]
doc.write_text(head + "| variable | type | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
