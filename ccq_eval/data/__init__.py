"""Shared data plumbing: the frozen cache (cache.py), JSONL reading (jsonl.py), offline HF access
(offline.py), and the text and records shipped with the package (text/, records/)."""

from pathlib import Path

# CC0 essays written for ccq-eval: S-NIAH-2/3's default haystack, longppl's "essays" corpus, the zoo's text
SHIPPED_ESSAYS = Path(__file__).resolve().parent / "text" / "essays.txt"
# More CC0 essays in the same voice that no zoo model trains on: longppl's "essays_heldout" corpus
HELDOUT_ESSAYS = Path(__file__).resolve().parent / "text" / "essays-heldout.txt"
# Small small records made from the shipped essays, in the real sources' layouts (DATA_DIR's): RULER's QA documents
# (records/ruler/) and the in-context recall tasks' records (records/recall/). The demo and the tests read them.
SHIPPED_RECORDS = Path(__file__).resolve().parent / "records"
