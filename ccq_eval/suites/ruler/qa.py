"""RULER's two QA tasks (qa_1: SQuAD v2 dev, qa_2: HotpotQA dev, distractor setting), as NVIDIA/RULER's
scripts/data/synthetic/qa.py reads its source and composes a prompt: the question's own documents (SQuAD: its
paragraph, then other paragraphs of its article; HotpotQA: its ten distractor-setting documents) and documents drawn
from the rest, shuffled with a fresh ``random.Random(42)``, each written "Document i:\\n<text>", in the QA template;
scored by string_match_part (any reference answer in the prediction).

The source's rows, one per question as the hub publishes them (rajpurkar/squad_v2, hotpotqa/hotpot_qa) and as
DATA_DIR/ruler/<squad|hotpotqa>.jsonl holds them:
- SQuAD: ``title``, ``context``, ``question``, ``answers`` (a list of strings; empty for an unanswerable question,
  which RULER skips, as it skips ``is_impossible`` ones);
- HotpotQA: ``question``, ``answer``, ``context`` (a list of [title, [sentences]]).

Where RULER needs more documents than the source has, it repeats the whole collection inside one prompt; that is not
the task, so such a length is refused (the real sources hold about 190K (SQuAD) and 9M (HotpotQA) tokens of
documents, far beyond 32K).

lm-eval's port (lm_eval/tasks/ruler/qa_utils.py, whose task names these are) reads the same sources and composes the
same prompt, but where every document is needed it uses them once instead of repeating them, it grows its document
count in its own steps, and it reads HotpotQA from a hub mirror of the JSON.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

QA_TEMPLATE = ("Answer the question based on the given documents. Only give me the answer and do not output any "
               "other words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the "
               "given documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}")
QA_ANSWER_PREFIX = " Answer:"
DOCUMENT_PROMPT = "Document {i}:\n{document}"
RULER_SEED = 42  # every prompt's documents are shuffled with a fresh random.Random(42)


@dataclass(frozen=True)
class Question:
    query: str
    outputs: tuple[str, ...]
    context: tuple[int, ...]  # its own documents (indices into the sorted distinct documents)
    more_context: tuple[int, ...] = ()  # SQuAD: the other paragraphs of its article


@dataclass(frozen=True)
class QaSet:
    questions: tuple[Question, ...]
    documents: tuple[str, ...]  # distinct, sorted (RULER's order; indices above point here)


def squad_set(rows: list[dict]) -> QaSet:
    """read_squad over the rows: documents are the distinct paragraphs sorted; answerable questions in order, each
    with the other paragraphs of its article (its title)."""
    documents = sorted({row["context"] for row in rows})
    index = {text: i for i, text in enumerate(documents)}
    article: dict[str, list[int]] = {}
    previous = None
    for row in rows:  # an article's paragraphs in order: a paragraph's questions are consecutive rows
        if (row["title"], row["context"]) != previous:
            article.setdefault(row["title"], []).append(index[row["context"]])
        previous = (row["title"], row["context"])
    questions = [Question(row["question"], tuple(row["answers"]), (index[row["context"]],),
                          tuple(i for i in article[row["title"]] if i != index[row["context"]]))
                 for row in rows if row["answers"]]
    return QaSet(tuple(questions), tuple(documents))


def hotpot_document(title: str, sentences: list[str]) -> str:
    return f"{title}\n{''.join(sentences)}"


def hotpot_set(rows: list[dict]) -> QaSet:
    """read_hotpotqa over the rows: documents are "title\\nsentences" distinct and sorted; every question with its
    ten documents."""
    documents = sorted({hotpot_document(t, s) for row in rows for t, s in row["context"]})
    index = {text: i for i, text in enumerate(documents)}
    questions = [Question(row["question"], (row["answer"],),
                          tuple(index[hotpot_document(t, s)] for t, s in row["context"])) for row in rows]
    return QaSet(tuple(questions), tuple(documents))


def chosen_documents(question: Question, total: int, count: int, rng: random.Random) -> list[int]:
    """generate_input_output's choice of ``count`` documents: the question's own, then (SQuAD) its article's, then
    ones drawn from the rest; or its own and a draw of its article's where those are enough. ``rng``: anything with
    random.Random's ``sample``."""
    if count >= total:  # every document, in the source's order (RULER's path for this; past it, it repeats them)
        return list(range(total))
    own, more = list(question.context), list(question.more_context)
    if count - len(own) > len(more):
        taken = set(own) | set(more)
        rest = [i for i in range(total) if i not in taken]
        return own + more + rng.sample(rest, max(0, count - len(own) - len(more)))
    return own + rng.sample(more, count - len(own))


def qa_record(question: Question, documents: list[str]) -> dict:
    """A final record: the documents shuffled with Random(42) and numbered, the template filled, the answer prefix
    apart (found by its first 10 characters from the right, as RULER finds it)."""
    shuffled = list(documents)
    random.Random(RULER_SEED).shuffle(shuffled)
    context = "\n\n".join(DOCUMENT_PROMPT.format(i=i + 1, document=d) for i, d in enumerate(shuffled))
    text = (QA_TEMPLATE + QA_ANSWER_PREFIX).format(context=context, query=question.query)
    cut = text.rfind(QA_ANSWER_PREFIX[:10])
    return {"input": text[:cut], "answer_prefix": text[cut:], "outputs": list(question.outputs)}


def string_match_part(prediction: str, references: list[str]) -> float:
    """RULER's string_match_part for one prediction: 1 when any reference is in it, case-insensitively (an empty
    reference never matches: the data checks refuse one, and it would be found in every prediction)."""
    text = prediction.lower()
    return max((1.0 if ref.strip() and ref.lower() in text else 0.0) for ref in references)
