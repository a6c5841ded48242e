"""scenarios.results.table: the one renderer, as text and as Markdown."""

from __future__ import annotations

from scenarios.results.table import Table, markdown, text


def test_text_aligns_labels_left_and_numbers_right() -> None:
    t = Table("title", ["task:", "a", "bb"], [["x", "1", "22"], ["long", "333", "4"]])
    assert t.text().splitlines() == [
        "title",
        "task:    a  bb",
        "x        1  22",
        "long   333   4",
    ]
    right = Table("", ["n", "v"], [["10", "1"], ["2", "22"]], label_left=False)
    assert right.lines() == [" n   v", "10   1", " 2  22"]


def test_a_total_row_is_set_apart() -> None:
    t = Table("", ["class", "n"], [["a", "1"], ["b", "2"], ["total", "3"]], total=True)
    assert t.lines() == [
        "class  n",
        "-----  -",
        "a      1",
        "b      2",
        "-----  -",
        "total  3",
    ]


def test_markdown_and_documents() -> None:
    t = Table("t", ["task:", "a"], [["x", " 1.0 "]])
    assert t.markdown() == "## t\n\n| task: | a |\n|---|---:|\n| x | 1.0 |"
    doc = markdown([t], ["# head"], "legend")
    assert doc == f"# head\n\n{t.markdown()}\n\nlegend\n"
    assert text([t, t]) == f"{t.text()}\n\n{t.text()}\n"


def test_a_wide_table_wraps_by_column_groups_nothing_truncated() -> None:
    """Twelve storage columns of 14 characters: groups of whole columns
    under the labels, a blank line apart, every line within WIDTH, every
    cell whole; a narrow table is one block."""
    from scenarios.results.table import WIDTH

    names = [f"relstorage-{i:03}" for i in range(12)]
    rows = [
        [label] + [f"{i}.{j:02} ms ± 5%" for i in range(12)]
        for j, label in enumerate(["create users/groups", "commit sequences"])
    ]
    t = Table("wall time", ["task:", *names], rows)
    lines = t.lines()
    assert max(len(line) for line in lines) <= WIDTH
    blocks = "\n".join(lines).split("\n\n")
    assert len(blocks) == 3  # 12 columns of 16 beside 19 of labels: 5, 5, 2
    for block in blocks:
        assert block.splitlines()[0].startswith("task:")
        assert block.splitlines()[2].startswith("commit sequences")
    flat = " ".join(lines)
    assert all(name in flat for name in names)
    assert all(f"{i}.01 ms ± 5%" in flat for i in range(12))
    assert Table("", ["a", "b", "c"], [["1", "2", "3"]]).lines() == [
        "a  b  c",
        "1  2  3",
    ]


def test_a_legend_is_filled_to_79_columns() -> None:
    legend = "word " * 60 + "relstorage-sqlite-hp " * 5
    out = text([Table("t", ["a", "b"], [["1", "2"]])], legend)
    assert max(len(line) for line in out.splitlines()) <= 79
    assert "relstorage-sqlite-hp" in out and "relstorage-\n" not in out
