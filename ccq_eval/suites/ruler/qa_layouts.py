"""The layouts a RULER QA source is read in, each unfolded to qa.py's rows (one per question):

- SQuAD: the documented rows (``title``, ``context``, ``question``, ``answers`` as a list of strings); SQuAD's own
  answers (``[{"text", "answer_start"}]``, as a flattened dev-v2.0.json holds them); Hugging Face's export
  (``Dataset.to_json``: ``answers`` as ``{"text": [...], "answer_start": [...]}``); and SQuAD's official
  dev-v2.0.json itself (``{"version", "data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}``), read as
  RULER reads it (an ``is_impossible`` question has no answer, and neither has one whose answers are all empty, as a
  flattened SQuAD 2.0 writes it: both dropped, as RULER drops unanswerable questions; an empty answer beside others
  is refused, since it is found in every prediction).
- HotpotQA: the documented rows (``question``, ``answer``, ``context`` as a list of [title, [sentences]]), which is
  also the official hotpot_dev_distractor_v1.json (a JSON array of them); and Hugging Face's export (``context`` as
  ``{"title": [...], "sentences": [[...], ...]}``). An empty answer is refused.

Anything else is refused in one line naming the file, the line and the layouts read."""

from __future__ import annotations

from ccq_eval.errors import BadInput

LAYOUTS = {
    "squad": "SQuAD rows (title, context, question, answers: a list of strings, SQuAD's [{text, answer_start}] or "
             "Hugging Face's {text: [...], answer_start: [...]}), or SQuAD's official dev-v2.0.json",
    "hotpotqa": "HotpotQA rows (question, answer, context: [[title, [sentences]], ...] as in "
                "hotpot_dev_distractor_v1.json, or Hugging Face's {title: [...], sentences: [...]})",
}


class QaLayoutError(BadInput):
    """A QA record in none of the layouts read."""


def unfold(source: str, numbered, where: str) -> list[tuple[int, dict]]:
    """(line, row) in qa.py's row format for every question of the records (``numbered``: (line, record))."""
    numbered = list(numbered)
    if source == "squad" and len(numbered) == 1 and isinstance(numbered[0][1], dict) and "data" in numbered[0][1]:
        return _squad_official(numbered[0][1], where)
    row_of = _squad_row if source == "squad" else _hotpot_row
    return [(number, row_of(record, _refuse(source, where, number))) for number, record in numbered]


def _refuse(source: str, where: str, number: int):
    def refuse(what: str):
        raise QaLayoutError(f"{where}: line {number}: {what}; expected {LAYOUTS[source]}")
    return refuse


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _answers(value, refuse) -> list[str]:
    """A question's answer texts, from any of SQuAD's three spellings."""
    if _strings(value):
        return list(value)
    if isinstance(value, list) and all(isinstance(a, dict) and isinstance(a.get("text"), str) for a in value):
        return [a["text"] for a in value]
    if isinstance(value, dict) and _strings(value.get("text")):
        return list(value["text"])
    refuse("'answers' is in none of SQuAD's layouts")


def _squad_row(record, refuse) -> dict:
    if not isinstance(record, dict):
        refuse("not a JSON object")
    for field in ("title", "context", "question"):
        if not isinstance(record.get(field), str):
            refuse(f"{field!r} must be a string")
    answers = [] if record.get("is_impossible") is True else _answers(record.get("answers"), refuse)
    if not any(a.strip() for a in answers):
        answers = []  # a flattened SQuAD 2.0 writes an unanswerable question's answer as "": RULER drops those
    elif not all(a.strip() for a in answers):
        refuse("'answers' holds an empty answer beside others (an empty answer is found in every prediction)")
    return {"title": record["title"], "context": record["context"], "question": record["question"],
            "answers": answers}


def _squad_official(document: dict, where: str) -> list[tuple[int, dict]]:
    """SQuAD's own JSON, as RULER's read_squad walks it: articles, their paragraphs, their questions."""
    def refuse(what: str):
        raise QaLayoutError(f"{where}: {what}; expected {LAYOUTS['squad']}")

    rows = []
    if not isinstance(document["data"], list):
        refuse("'data' must be a list of articles")
    for article in document["data"]:
        if not isinstance(article, dict) or not isinstance(article.get("title"), str) or not isinstance(
                article.get("paragraphs"), list):
            refuse("an article must have a string 'title' and a list of 'paragraphs'")
        for paragraph in article["paragraphs"]:
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str) or not isinstance(
                    paragraph.get("qas"), list):
                refuse(f"a paragraph of {article['title']!r} must have a string 'context' and a list of 'qas'")
            for qa in paragraph["qas"]:
                if not isinstance(qa, dict):
                    refuse(f"a question of {article['title']!r} is not an object")
                row = _squad_row({"title": article["title"], "context": paragraph["context"], **qa}, refuse)
                rows.append((len(rows) + 1, row))
    return rows


def _hotpot_row(record, refuse) -> dict:
    if not isinstance(record, dict):
        refuse("not a JSON object")
    for field in ("question", "answer"):
        if not isinstance(record.get(field), str):
            refuse(f"{field!r} must be a string")
    if not record["answer"].strip():
        refuse("'answer' is empty (an empty answer is found in every prediction; HotpotQA has no unanswerable "
               "question)")
    context = record.get("context")
    if isinstance(context, dict):  # Hugging Face's export: parallel lists
        titles, sentences = context.get("title"), context.get("sentences")
        if not _strings(titles) or not isinstance(sentences, list) or len(titles) != len(sentences):
            refuse("'context' as an object must hold 'title' and 'sentences' lists of one length")
        context = [[t, s] for t, s in zip(titles, sentences)]
    if not isinstance(context, list) or not all(
            isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and _strings(entry[1])
            for entry in context):
        refuse("'context' must be a list of [title, [sentences]]")
    return {"question": record["question"], "answer": record["answer"], "context": [list(e) for e in context]}
