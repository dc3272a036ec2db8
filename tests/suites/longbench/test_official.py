"""LongBench against its official definitions (THUDM/LongBench at the commit in tasks.py), written
into this file from LongBench/config/dataset2prompt.json, dataset2maxlen.json, metrics.py, eval.py
and pred.py, not computed by the code under test."""

import pytest
import torch

from ccq_eval.suites.longbench import data
from ccq_eval.suites.longbench.scoring import score
from ccq_eval.suites.longbench.tasks import TASKS

PASSAGES = ("Answer the question based on the given passages. Only give me the answer and do not output any other "
            "words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given "
            "passages. Only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:")
OFFICIAL_PROMPTS = {
    "narrativeqa": "You are given a story, which can be either a novel or a movie script, and a question. Answer the question asconcisely as you can, using a single phrase if possible. Do not provide any explanation.\n\nStory: {context}\n\nNow, answer the question based on the story asconcisely as you can, using a single phrase if possible. Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:",
    "qasper": "You are given a scientific article and a question. Answer the question as concisely as you can, using a single phrase or sentence if possible. If the question cannot be answered based on the information in the article, write \"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or \"unanswerable\". Do not provide any explanation.\n\nArticle: {context}\n\n Answer the question based on the above article as concisely as you can, using a single phrase or sentence if possible. If the question cannot be answered based on the information in the article, write \"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or \"unanswerable\". Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:",
    "multifieldqa_en": "Read the following text and answer briefly.\n\n{context}\n\nNow, answer the following question based on the above text, only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:",
    "hotpotqa": PASSAGES, "2wikimqa": PASSAGES, "musique": PASSAGES,
    "gov_report": "You are given a report by a government agency. Write a one-page summary of the report.\n\nReport:\n{context}\n\nNow, write a one-page summary of the report.\n\nSummary:",
    "qmsum": "You are given a meeting transcript and a query containing a question or instruction. Answer the query in one or more sentences.\n\nTranscript:\n{context}\n\nNow, answer the query based on the above meeting transcript in one or more sentences.\n\nQuery: {input}\nAnswer:",
    "multi_news": "You are given several news passages. Write a one-page summary of all news. \n\nNews:\n{context}\n\nNow, write a one-page summary of all the news.\n\nSummary:",
    "trec": "Please determine the type of the question below. Here are some examples of questions.\n\n{context}\n{input}",
    "triviaqa": "Answer the question based on the given passage. Only give me the answer and do not output any other words. The following are some examples.\n\n{context}\n\n{input}",
    "samsum": "Summarize the dialogue into a few short sentences. The following are some examples.\n\n{context}\n\n{input}",
    "lcc": "Please complete the code given below. \n{context}Next line of code:\n",
    "repobench-p": "Please complete the code given below. \n{context}{input}Next line of code:\n",
}
OFFICIAL_MAXLEN = {"narrativeqa": 128, "qasper": 128, "multifieldqa_en": 64, "hotpotqa": 32, "2wikimqa": 32,
                   "musique": 32, "gov_report": 512, "qmsum": 512, "multi_news": 512, "trec": 64, "triviaqa": 32,
                   "samsum": 128, "lcc": 64, "repobench-p": 64}


def test_all_14_prompts_are_byte_identical_to_the_official_ones():
    assert set(TASKS) == set(OFFICIAL_PROMPTS)
    record = {"context": "<C>", "input": "<I>", "answers": [], "_id": "x"}
    for key, official in OFFICIAL_PROMPTS.items():
        assert data.render_prompt(key, record) == official.format(**record), key


def test_budgets_and_metrics_are_the_official_ones():
    assert {k: t.max_gen for k, t in TASKS.items()} == OFFICIAL_MAXLEN
    assert {k for k, t in TASKS.items() if t.first_line} == {"trec", "triviaqa", "samsum"}
    assert {k for k, t in TASKS.items() if t.metric == "code_sim_score"} == {"lcc", "repobench-p"}
    assert {k for k, t in TASKS.items() if t.stop_at_newline} == {"samsum"}


# (prediction, gold, official score): fuzz.ratio = round(200 * matches / (len(a) + len(b)))
CODE_CASES = [
    ("   \n        return x", "        return x", 32),  # a line of spaces is the first line (lm-eval: 100)
    ("\n\n   \n        return x", "        return x", 32),  # leading newlines go first
    ("# note\n        return x", "        return x", 100),  # comment lines are skipped
    ("`x`\n// c\nreturn y", "return y", 100),
    ("", "return y", 0),
    ("\n", "return y", 0),
]


@pytest.mark.parametrize("prediction,gold,expected", CODE_CASES)
def test_code_similarity_takes_the_official_first_line(prediction, gold, expected):
    assert score("lcc", prediction, [gold], []) == pytest.approx(expected)


def test_scores_are_the_best_over_answers_and_zero_without_any():
    assert score("hotpotqa", "paris", ["london", "Paris"], []) == 100.0
    assert score("hotpotqa", "paris", [], []) == 0.0  # the official max starts from 0
    assert score("gov_report", "anything", [], []) == 0.0
    assert score("trec", "Location", [], ["Location"]) == 0.0


def test_samsum_generation_stops_at_the_newline_token_as_pred_py_does():
    """Against greedy decoding by full forwards: the first token may be neither EOS nor newline
    (pred.py's min_length), then decoding ends at the first newline token, which stays in the output."""
    from lm_eval.api.instance import Instance

    from ccq_eval.run import checkpoint_evaluand
    from tests.helpers import byte_tokenizer, tiny_model

    torch.manual_seed(0)
    model, tok = tiny_model("gla"), byte_tokenizer()
    newline = tok.encode("\n", add_special_tokens=False)[-1]
    model.lm_head.register_forward_hook(lambda m, i, out: out + 50.0 * torch.nn.functional.one_hot(
        torch.tensor(newline), out.shape[-1]).to(out.dtype))  # the newline is always the likeliest token
    lm = checkpoint_evaluand(model, tok, {"path": "bytes"}, max_length=256, batch_size=1).lm
    prompt = "Dialogue: A: hi\nSummary:"
    request = Instance("generate_until", doc={}, idx=0, arguments=(prompt, {
        "until": [], "max_gen_toks": 12, "do_sample": False, "eos_strings": ["\n"]}))
    got = lm.generate_until([request], disable_tqdm=True)[0]
    ids = torch.tensor([tok(prompt)["input_ids"]])
    with torch.no_grad():
        logits = model(ids).logits[0, -1]
    logits[[newline, tok.eos_token_id]] = -float("inf")
    first = int(logits.argmax())
    assert got == tok.decode([first]) + "\n"
    plain = Instance("generate_until", doc={}, idx=0, arguments=(prompt, {"until": [], "max_gen_toks": 5,
                                                                          "do_sample": False}))
    assert lm.generate_until([plain], disable_tqdm=True)[0] == "\n" * 5  # without the rule: five newlines
