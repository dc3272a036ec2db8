"""BABILong (Kuratov et al., 2024): bAbI's reasoning tasks with their statements hidden among sentences of a haystack,
generated at the model's own lengths as the reference (booydar/babilong) generates them, and scored as it scores
them. babi.py (bAbI's task files, as the reference reads them), prompts.py (its prompt and variants), scoring.py (its
``compare_answers``), noise.py (a sample at a given length in the model's tokens). Each is checked against the
reference's own code (tests/suites/babilong/). The suite itself (driver, tables, the published splits) is not
registered yet: `--suite babilong` does not exist."""
