"""The front door stays small and true: README and docs sizes, tables a reader can read, links that
resolve, an architecture that names every folder of src/, figures stated from one source, and
results that do not swamp the tree (issue 44)."""

import importlib.util
import pathlib
import re

import pytest

from conftest import CHECKOUT, in_checkout

pytestmark = pytest.mark.skipif(not in_checkout(), reason="needs the source checkout")

KB = 1000
DOCS = CHECKOUT / "docs"
RESULTS = CHECKOUT / "bench" / "results"


def table_cells(text):
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            yield from (c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1])


def test_readme_fits_two_screens_and_its_table_cells_are_short():
    readme = (CHECKOUT / "README.md").read_text()
    assert len(readme.encode()) < 8 * KB
    long_cells = [c[:80] + "..." for c in table_cells(readme) if len(c) > 300]
    assert not long_cells, f"README table cells over 300 characters: {long_cells}"


def test_table_cells_reads_markdown_rows():
    assert list(table_cells("text | not a row\n| a | b \\| c |\n")) == ["a", "b \\| c"]


def test_docs_stay_within_their_sizes():
    sizes = {p.name: len(p.read_bytes()) for p in DOCS.glob("*.md")}
    assert sum(sizes.values()) < 150 * KB, sizes
    assert sizes["PERFORMANCE.md"] < 25 * KB
    for design in ("MULTIPATH.md", "ROUTING.md", "NET.md"):
        assert sizes[design] < 30 * KB, design


def test_docs_index_names_every_document():
    index = (DOCS / "README.md").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.name not in index]
    assert not missing, f"docs/README.md does not list {missing}"


def test_architecture_names_every_folder_of_src():
    architecture = (DOCS / "ARCHITECTURE.md").read_text()
    folders = sorted(p.name for p in (CHECKOUT / "src").iterdir() if p.is_dir())
    missing = [f for f in folders if f"`{f}`" not in architecture and f"src/{f}/" not in architecture]
    assert not missing, f"docs/ARCHITECTURE.md does not name src/ folders {missing}"


def test_architecture_names_only_documents_that_exist():
    named = set(re.findall(r"\b[A-Z][A-Z_]*\.md\b", (DOCS / "ARCHITECTURE.md").read_text()))
    missing = [n for n in named if not (DOCS / n).exists() and not (CHECKOUT / n).exists()]
    assert not missing, f"docs/ARCHITECTURE.md names documents the repository does not have: {missing}"


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def dangling_links(path):
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#")[0]).exists():
            yield target


def test_relative_links_in_readme_and_docs_resolve():
    dangling = {str(p.relative_to(CHECKOUT)): list(dangling_links(p))
                for p in [CHECKOUT / "README.md", *DOCS.glob("*.md")]}
    assert not {k: v for k, v in dangling.items() if v}


def test_a_link_to_a_missing_file_is_dangling(tmp_path):
    (tmp_path / "here.md").write_text("[there](there.md) [web](https://x.org) [anchor](#a) [self](here.md#a)")
    assert list(dangling_links(tmp_path / "here.md")) == ["there.md"]


def gen_figures():
    spec = importlib.util.spec_from_file_location("gen_figures", CHECKOUT / "tools" / "gen_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_and_performance_state_the_figures_of_the_one_source():
    stale = [str(p.relative_to(CHECKOUT)) for p, text in gen_figures().rendered().items() if p.read_text() != text]
    assert not stale, f"{stale} differ from bench/results/current.json: run tools/gen_figures.py"


def test_a_changed_figure_shows_in_both_documents():
    module = gen_figures()
    figures = module.load()
    figures["ratios"][0]["ratio"] = "9.99-9.99"
    texts = module.rendered(figures=figures).values()
    assert all("9.99-9.99" in text for text in texts)


def test_results_stay_few_and_small():
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert len(files) < 300
    assert sum(p.stat().st_size for p in files) < 2_000_000  # "under 2 MB" (issue 44)
    assert not [p for p in files if re.fullmatch(r"command.*\.sh", p.name)], "command scripts belong in the archive"


def test_each_results_folder_keeps_a_readme_and_at_most_one_archive():
    for folder in (p for p in RESULTS.iterdir() if p.is_dir()):
        assert (folder / "README.md").is_file(), folder.name
        archives = [p.name for p in folder.rglob("*") if p.name.endswith((".tar.xz", ".tgz", ".tar.gz"))]
        assert len(archives) <= 1, (folder.name, archives)
