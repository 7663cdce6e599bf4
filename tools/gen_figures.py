#!/usr/bin/env python3
"""Writes the current figures into README.md and docs/PERFORMANCE.md from one source.

The figures live in bench/results/current.json; each document holds them between the markers
<!-- figures:NAME:begin --> and <!-- figures:NAME:end -->, so they are stated twice but kept once.

    tools/gen_figures.py           # rewrite both documents
    tools/gen_figures.py --check   # exit 1 if either document differs from the source
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench/results/current.json"
COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter")


def load(path=SOURCE):
    return json.loads(pathlib.Path(path).read_text())


def machines(figures):
    seen = []
    for row in figures["ratios"]:
        if row["machine"] not in seen:
            seen.append(row["machine"])
    return seen


def cell(row):
    sizes = row["sizes"]
    return f'{row["ratio"]} {sizes}' if sizes.startswith("from") else f'{row["ratio"]} ({sizes})'


def readme_tables(figures):
    """The README's two short tables: braid / NCCL per machine, and what braid costs a process."""
    lines = ["| braid / NCCL (nccl-tests busbw) | " + " | ".join(COLLECTIVES) + " | measured |",
             "|---|" + "---|" * (len(COLLECTIVES) + 1)]
    for machine in machines(figures):
        rows = {r["collective"]: r for r in figures["ratios"] if r["machine"] == machine}
        dates = sorted({r["date"] for r in rows.values()})
        lines.append(f"| {machine} | " + " | ".join(cell(rows[c]) if c in rows else "-" for c in COLLECTIVES)
                     + f" | {', '.join(dates)} |")
    lines += ["", "| what braid costs a PyTorch process | plain | through braid | measured |", "|---|---|---|---|"]
    for c in figures["costs"]:
        lines.append(f'| {c["what"]} | {c["plain"]} | {c["braid"]} ({c["cost"]}) | {c["date"]} |')
    return "\n".join(lines)


def performance_tables(figures):
    """docs/PERFORMANCE.md: one table per machine and collective, each with its command and date."""
    out = []
    for machine in machines(figures):
        for row in (r for r in figures["ratios"] if r["machine"] == machine):
            out += [f'### {machine}: {row["collective"]}', "",
                    "| sizes | braid / NCCL default | date | source |", "|---|---|---|---|",
                    f'| {row["sizes"]} | {row["ratio"]} | {row["date"]} | {row["source"]} |', "",
                    f'Command: {row["command"]}.', ""]
    out += ["### What braid costs a process", "",
            "| what | plain | through braid | cost | date | source |", "|---|---|---|---|---|---|"]
    for c in figures["costs"]:
        out.append(f'| {c["what"]} | {c["plain"]} | {c["braid"]} | {c["cost"]} | {c["date"]} | {c["source"]} |')
    out.append("")
    out += [f'- {c["what"]}: {c["command"]}.' for c in figures["costs"]]
    return "\n".join(out)


TARGETS = {"README.md": ("summary", readme_tables), "docs/PERFORMANCE.md": ("current", performance_tables)}


def replace_block(text, name, body):
    begin, end = f"<!-- figures:{name}:begin -->", f"<!-- figures:{name}:end -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"markers {begin} ... {end} are missing")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def rendered(root=ROOT, figures=None):
    """{document path: its text with the figures written in}."""
    figures = figures or load(pathlib.Path(root) / "bench/results/current.json")
    out = {}
    for rel, (name, make) in TARGETS.items():
        path = pathlib.Path(root) / rel
        out[path] = replace_block(path.read_text(), name, make(figures))
    return out


def main(argv):
    check = "--check" in argv[1:]
    stale = []
    for path, text in rendered().items():
        if path.read_text() != text:
            stale.append(path)
            if not check:
                path.write_text(text)
    if check and stale:
        print("gen_figures: out of date: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
              + "; run tools/gen_figures.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
