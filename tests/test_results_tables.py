"""The tables of docs/RESULTS.md that are marked as built from committed results (`<!-- table: COMMAND -->`) are
exactly what their commands print from benchmarks/*/results/ today (benchmarks/rebuild_tables.py)."""

from tests.helpers import ROOT, load_script

rebuild = load_script("rebuild_tables.py")


def test_every_marked_table_is_what_its_committed_results_give(capsys):
    assert rebuild.main(["--check"]) == 0, capsys.readouterr().out
    tables = rebuild.marked_tables((ROOT / "docs" / "RESULTS.md").read_text())
    assert len(tables) >= 8 and all("runs/" not in t.command for t in tables)


def test_a_table_edited_by_hand_is_found_and_rebuilt(tmp_path, capsys):
    page = tmp_path / "RESULTS.md"
    command = "python benchmarks/distill/summarize.py"
    page.write_text(f"before\n<!-- table: {command} -->\n\n| a hand-made row |\n\n<!-- /table -->\nafter\n")
    assert rebuild.main(["--check", "--page", str(page)]) == 1
    assert f"differs from its results: {command}" in capsys.readouterr().out
    assert rebuild.main(["--page", str(page)]) == 0
    text = page.read_text()
    assert "hand-made" not in text and "| teacher |" in text and text.endswith("<!-- /table -->\nafter\n")
    assert rebuild.main(["--check", "--page", str(page)]) == 0
