"""The messages docs/troubleshooting.md lists are ones the code prints, so the page cannot drift from the code.

Each message is the code span of a table's first column; `<...>` stands for what the code fills in and `...` for an
elided tail. Every literal piece of a message (between placeholders and `; ` clauses, at least 8 characters) must
occur in a string of the code under src/ or scripts/ (implicitly concatenated literals joined first).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
CODE_SPAN = re.compile(r"`((?:[^`\\]|\\.)+)`")
PLACEHOLDER = re.compile(r"<[^<>]*>|\.\.\.|; ")
JOIN = re.compile(r"([\"'])\s*\n\s*[fr]?\1")  # "abc "\n    f"def" -> "abc def"


def _source() -> str:
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "scripts").glob("*.py"), *(ROOT / "scripts").glob("*.sh")]
    return JOIN.sub("", "\n".join(path.read_text(encoding="utf-8") for path in files))


def messages(page: str) -> list[str]:
    """The code spans in the first column of every table row (the header rows excepted)."""
    found = []
    for line in page.splitlines():
        if line.startswith("| `"):
            first = re.split(r"(?<!\\)\| ", line[2:], maxsplit=1)[0]
            found += [span.replace("\\|", "|") for span in CODE_SPAN.findall(first)]
    return found


def pieces(message: str) -> list[str]:
    parts = (part.strip(" .,;:()'\"") for part in PLACEHOLDER.split(message))
    return [part for part in parts if len(part) >= 8]


def test_every_listed_message_is_printed_by_the_code() -> None:
    source = _source()
    listed = messages(PAGE.read_text(encoding="utf-8"))
    assert len(listed) >= 40, f"only {len(listed)} messages found in {PAGE.name}: the table format changed?"
    missing = [(message, piece) for message in listed for piece in pieces(message) if piece not in source]
    assert not missing, "messages in docs/troubleshooting.md that no code prints (update the page):\n" + "\n".join(
        f"{message!r}: {piece!r}" for message, piece in missing
    )


def test_the_check_can_fail() -> None:
    """A message the code does not print is caught, and placeholders are not taken literally."""
    assert pieces("the <what> server on '<name>' did not answer the goal in <s> s; ...") == [
        "server on",
        "did not answer the goal in",
    ]
    assert "the robot exploded" not in _source()
    assert messages("| `the robot exploded` | run |\n| message | what |\n") == ["the robot exploded"]
