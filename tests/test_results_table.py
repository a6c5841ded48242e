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
