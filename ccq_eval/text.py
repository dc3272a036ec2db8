"""Text from a store, a model or a user, as a terminal or a one-line cell may show it: on one line, and every
character that is not printable (controls such as ESC and BEL, which act on a terminal; format characters such as
U+202E, which reorders what follows, or U+200B, which hides) written as its visible escape. Labels themselves
are kept and stored byte-exact; only these renderings escape."""

from __future__ import annotations

import unicodedata


def visible(text) -> str:
    """One line, non-printable characters escaped (``\\x1b``, ``\\u202e``); printable text (accents, combining
    marks, any script) unchanged."""
    if not isinstance(text, str):
        return text
    joined = " ".join(text.splitlines())
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in joined)


def control_character(text: str) -> str | None:
    """The first control character of ``text`` (Unicode category Cc: ESC, BEL, newline, tab, ...) as U+XXXX, or None."""
    for ch in text:
        if unicodedata.category(ch) == "Cc":
            return f"U+{ord(ch):04X}"
    return None


def label_problem(label: str) -> str | None:
    """Why a label typed at a flag cannot be used, or None: it names a model in every table, figure and terminal
    line, so it must say something and hold no control character (those would act on the terminal, stop pdflatex
    and break table rows); format characters and accents are kept as typed."""
    if not label.strip():
        return "is empty; name the model (or drop --label for the default)"
    if (found := control_character(label)) is not None:
        return f"holds the control character {found}; labels are shown in terminals, tables and LaTeX: drop it"
    return None
