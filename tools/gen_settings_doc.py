#!/usr/bin/env python3
"""Rewrites the table in docs/SETTINGS.md from src/common/settings_table.inc (run after adding a setting)."""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
table = (root / "src/common/settings_table.inc").read_text()
SETTING = r'^BRAID_SETTING\((\w+),\s*(\w+),\s*(.*?),\s*"(.*)"\)\s*$'
NUMBER = r'^BRAID_NUMBER\((\w+),\s*(\w+),\s*([^,]+),\s*([^,]+),\s*([^,]+),\s*"(.*)"\)\s*$'
REFUSED = "; any other value is refused with a warning and the default kept."
rows = []
for line in table.splitlines():
    text, number = re.match(SETTING, line), re.match(NUMBER, line)
    if not (text or number):
        continue
    if number:
        field, typ, default, lo, hi, desc = number.groups()
        allowed = f"{lo.strip()} to {hi.strip()}"
    else:
        field, typ, default, desc = text.groups()
        allowed = {"String": "text", "Bool": "boolean"}.get(typ, "")
    default = default.strip()
    if default == '""':
        default = "(empty)"
    if typ == "Choice":
        choices = default.strip('"').split("|")
        default = choices[0]
        allowed = ", ".join(f"`{a}`" for a in choices)
    rows.append(f"| `BRAID_{field.upper()}` | {typ.lower()} | `{default.strip(chr(34))}` | {allowed} | {desc} |")
doc = root / "docs/SETTINGS.md"
text = doc.read_text()
head = text.split("| variable |")[0]
doc.write_text(head + "| variable | type | default | accepted | meaning |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
