"""The docs name real files: every relative link of docs/ARCHITECTURE.md (and of the other pages) points at a file or
folder that exists, so the architecture page cannot drift from the tree unnoticed."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
LINK = re.compile(r"\]\(([^)#\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_of_a_page_exists(page):
    missing = []
    for target in LINK.findall(page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            missing.append(target)
    assert not missing, f"{page.name} links to missing files: {missing}"


def test_the_architecture_page_names_every_task_and_links_each_task_file():
    from fastformer.tasks.registry import TASKS

    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for name in TASKS:
        assert f"../src/fastformer/tasks/{name}/task.py" in page, name
    named = {(ROOT / "docs" / t).resolve() for t in LINK.findall(page) if "://" not in t}
    task_files = {p.resolve() for p in (ROOT / "src" / "fastformer" / "tasks").rglob("*.py") if p.stem != "__init__"}
    assert (
        not task_files
        - named
        - {(ROOT / "src/fastformer/tasks/registry.py").resolve()}
        - {p for p in task_files if p.name == "config.py"}
    ), sorted(str(p.relative_to(ROOT)) for p in task_files - named)


def github_anchor(heading):
    """The fragment GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_results_contents_links_every_section_in_order():
    # RESULTS.md runs to thousands of lines: its contents list is how a reader finds a section, so it must not rot
    page = (ROOT / "docs" / "RESULTS.md").read_text()
    sections = re.findall(r"^## (.+)$", page, re.M)
    contents = re.findall(r"^- \[(.+)\]\(#([^)]+)\)$", page.split("\n## ", 1)[0], re.M)
    assert contents == [(section, github_anchor(section)) for section in sections]
