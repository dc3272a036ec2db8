"""Long-context perplexity corpora: where they come from, how they are read, and which token
sequences get scored.

Definition (also in the task README): every scored sequence starts with the tokenizer's BOS
token (EOS when it has none) as context, so all L tokens are scored. ppl@L = exp(sum of NLL /
number of scored tokens), pooled over the corpus's sequences. L_max is the largest length of the
run. Policy "document": the first N documents in file order with at least L_max tokens, each scored
on its first L_max tokens; shorter documents are skipped and counted. Policy "concat": documents in
file order joined with EOS separators and cut into consecutive L_max-token streams (the first N).
Every length L scores the first L tokens of the same sequences, so one pass at L_max gives them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ccq_eval.data import HELDOUT_ESSAYS, SHIPPED_ESSAYS, local
from ccq_eval.data.cache import content_hash, load_or_build, stable_hash
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.errors import BadInput

SELECTION_VERSION = 1


@dataclass(frozen=True)
class Corpus:
    name: str
    policy: str  # "document" | "concat"
    licence: str


# The paper's six corpora; where each comes from and how it is cleaned: sources.py.
CORPORA: dict[str, Corpus] = {
    "govreport": Corpus("govreport", "concat", "SCROLLS (GovReport: public-domain US government reports)"),
    "qmsum": Corpus("qmsum", "concat", "SCROLLS (QMSum: MIT)"),
    "narrativeqa": Corpus("narrativeqa", "document", "SCROLLS (NarrativeQA: Apache-2.0)"),
    "qasper": Corpus("qasper", "concat", "SCROLLS (Qasper: CC BY 4.0)"),
    "codeparrot": Corpus("codeparrot", "concat", "per-file licences of the GitHub sources"),
    "pg19": Corpus("pg19", "document", "Apache-2.0 (Project Gutenberg books published before 1919)"),
}
FETCH_COMMAND = "ccq-eval data fetch longppl"


def _python_docs() -> list[dict]:
    """Python's reference documentation (pydoc_data.topics, what `help('topic')` prints), one topic a document."""
    from pydoc_data.topics import topics

    return [{"text": topics[name], "name": name} for name in sorted(topics)]


def _python_code() -> list[dict]:
    """The standard library's top-level modules, one file a document, in file-name order."""
    import sysconfig

    folder = Path(sysconfig.get_paths()["stdlib"])
    return [{"text": path.read_text(encoding="utf-8"), "name": path.name} for path in sorted(folder.glob("*.py"))]


ESSAY_ROTATIONS = 12
ESSAY_DOCUMENT_CHARS = 24 * 1024


def _essay_rotations(path: Path = SHIPPED_ESSAYS) -> list[dict]:
    """A shipped CC0 essay collection as 12 documents: the collection started at 12 evenly spaced
    paragraphs and cycled to 24K characters. On `essays` (the zoo's training text) perplexity past the
    training length measures length extrapolation alone; on `essays_heldout` (same voice, never trained
    on; 7.4K characters, so a document repeats itself only past that length) it measures generalisation."""
    paragraphs = [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    documents = []
    for i in range(ESSAY_ROTATIONS):
        start = round(i * len(paragraphs) / ESSAY_ROTATIONS)
        cycle, text = "\n\n".join(paragraphs[start:] + paragraphs[:start]), ""
        while len(text) < ESSAY_DOCUMENT_CHARS:
            text += cycle + "\n\n"
        documents.append({"text": text, "name": f"essays from paragraph {start}"})
    return documents


# Corpora that ship with the package (CC0) or with every Python installation (PSF licence): the offline
# demo reads them, no download needed. Python's text follows its version, which the cached copy records.
# All three are scored with the "document" policy (the default for corpora outside CORPORA).
SHIPPED = {"essays": _essay_rotations, "essays_heldout": lambda: _essay_rotations(HELDOUT_ESSAYS),
           "pydocs": _python_docs, "pycode": _python_code}


class CorpusError(BadInput):
    """A corpus that is missing or malformed; the message names it and the fix."""


def local_path(corpus: str, data_dir: str | None) -> Path | None:
    """DATA_DIR/longppl/<corpus>.jsonl (.json, .gz), else the fetched copy in the cache (verified), else None; a
    SHIPPED corpus is written to the cache, verified on every read and rebuilt if altered."""
    mine = local.candidates("longppl", corpus, data_dir)[:-1]  # the user's own files, before the cache's copy
    if corpus in SHIPPED and not any(path.exists() for path in mine):
        import platform

        path = local.candidates("longppl", corpus, None)[-1]
        load_or_build(path, {"corpus": corpus, "python": platform.python_version()}, SHIPPED[corpus])
        return path
    return local.find("longppl", corpus, data_dir)


def check_available(corpora: list[str], data_dir: str | None) -> None:
    local.require(corpora, local_path, CorpusError, "long-context corpora", "longppl", data_dir,
                  "<corpus>.jsonl (field 'text')", FETCH_COMMAND)


def read_documents(path: Path) -> tuple[list[str], int]:
    """(texts, empty lines and empty texts skipped); one-line errors for anything that is not UTF-8 JSONL with 'text'."""
    records, empty = read_jsonl(path, CorpusError, "corpus")
    texts = []
    for number, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise CorpusError(f"corpus {str(path)!r}: line {number} has no string field 'text'")
        if record["text"].strip():
            texts.append(record["text"])
        else:
            empty += 1
    return texts, empty


@dataclass
class Selection:
    """The token sequences a corpus is scored on, with the record of how they were chosen."""

    corpus: str
    policy: str
    sequences: list[list[int]]  # each starts with the context token, then L_max scored tokens
    names: list[str]  # which document(s) each sequence came from
    skipped_short: int
    skipped_empty: int
    available: int
    fingerprint: str

    def record(self) -> dict:
        return {"policy": self.policy, "rule": _RULES[self.policy], "sequences": len(self.sequences),
                "skipped_short": self.skipped_short, "skipped_empty": self.skipped_empty,
                "documents_read": self.available, "fingerprint": self.fingerprint,
                "selection_version": SELECTION_VERSION}


_RULES = {"document": "first N documents in file order with >= L_max tokens, scored on their first L_max tokens",
          "concat": "documents in file order joined with EOS, cut into consecutive L_max-token streams"}


def context_token(tokenizer) -> int:
    token = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if token is None:
        raise CorpusError("the tokenizer has neither a BOS nor an EOS token to start a scored sequence with")
    return token


BOUNDARY_MARGIN = 64  # tokens past the ones used: a cut text changes only its last word's tokens


def leading_ids(tokenizer, text: str, needed: int | None) -> list[int]:
    """The token ids of text, or of a prefix holding at least ``needed`` + a margin of them (a 12 MB
    document is not tokenized whole for 4K tokens). The first ``needed`` ids equal the whole text's:
    tokenizers split at word boundaries, so cutting the text changes only the tokens at the cut."""
    if needed is None:
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    chars = max(4096, 8 * (needed + BOUNDARY_MARGIN))
    while True:
        ids = tokenizer(text[:chars], add_special_tokens=False)["input_ids"]
        if chars >= len(text) or len(ids) >= needed + BOUNDARY_MARGIN:
            return ids if chars >= len(text) else ids[:needed]
        chars *= 2


def select(corpus: str, path: Path, tokenizer, l_max: int, count: int | None) -> Selection:
    texts, empty = read_documents(path)
    policy = CORPORA[corpus].policy if corpus in CORPORA else "document"
    start = context_token(tokenizer)
    sequences, names, short = [], [], 0
    if policy == "document":
        for index, text in enumerate(texts):
            ids = leading_ids(tokenizer, text, l_max)
            if len(ids) < l_max:
                short += 1
                continue
            sequences.append([start, *ids[:l_max]])
            names.append(f"doc {index}")
            if count is not None and len(sequences) == count:
                break
    else:
        separator = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else start
        stream, first_doc = [], 0
        for index, text in enumerate(texts):
            needed = None if count is None else (count - len(sequences)) * l_max - len(stream)
            ids = leading_ids(tokenizer, text, needed)
            stream += ids + ([separator] if needed is None or len(ids) < needed else [])
            while len(stream) >= l_max and (count is None or len(sequences) < count):
                sequences.append([start, *stream[:l_max]])
                names.append(f"docs {first_doc}-{index}")
                stream, first_doc = stream[l_max:], index
            if count is not None and len(sequences) == count:
                break
    if not sequences:
        raise CorpusError(f"corpus {corpus!r} ({path}): no {'document' if policy == 'document' else 'stream'} of "
                          f"{l_max} tokens ({len(texts)} documents, {short} shorter); use smaller --lengths or a larger corpus")
    fingerprint = stable_hash({"sequences": content_hash([{"ids": s} for s in sequences]), "l_max": l_max})
    return Selection(corpus, policy, sequences, names, short, empty, len(texts), fingerprint)


def fetch(corpora: list[str] | None = None, progress=print) -> list[Path]:
    """Download each corpus's own files from the hub (pinned, sha256-checked) and freeze its documents
    as <cache>/longppl/<corpus>.jsonl."""
    from ccq_eval.suites.longppl.sources import fetch_corpus

    return [fetch_corpus(name, CORPORA[name].licence, progress) for name in corpora or list(CORPORA)]


DOCS_VERSION = 1


def lm_eval_docs(selection: Selection, tokenizer, length: int) -> list[dict]:
    """The selected sequences truncated to one length, as the text lm-eval's loglikelihood_rolling
    reads (it re-tokenizes, so a sequence that does not survive decode/encode is refused)."""
    docs = []
    for index, ids in enumerate(selection.sequences):
        scored = ids[1 : length + 1]
        text = tokenizer.decode(scored)
        if tokenizer(text, add_special_tokens=False)["input_ids"] != scored:
            raise ValueError(f"longppl_{selection.corpus}: sequence {index} does not survive decode/encode with this "
                             "tokenizer; use ccq-eval's one-pass engine")
        docs.append({"text": text, "n_tokens": len(scored), "index": index, "max_length": length})
    return docs
