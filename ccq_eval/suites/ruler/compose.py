"""RULER's variable tracking (VT), common words extraction (CWE) and frequent words extraction (FWE): one prompt from
its draws, as NVIDIA/RULER's scripts/data/synthetic/variable_tracking.py, common_words_extraction.py and
freq_words_extraction.py compose it (scripts/synthetic.yaml's arguments: VT noise haystack, 1 chain, 4 hops; CWE
freq_cw 30, freq_ucw 3, num_cw 10; FWE alpha 2.0), with scripts/data/template.py's base template (the task's
template followed by its answer prefix, both from scripts/data/synthetic/constants.py). Drawing and sizing are
data.py's; what is here is pure, so the peer test can hand it RULER's own draws.

Where lm-eval's port (lm_eval/tasks/ruler/vt_utils.py, cwe_utils.py, fwe_utils.py) differs from RULER, RULER is
followed: the port's VT answer prefix misspells "assigned" ("assgined"), joins its noise sentences with spaces and a
newline inside each sentence where RULER joins them with newlines, and randomises the worked example's variable names
but not its value; its CWE shuffles with one shared generator where RULER shuffles every list with a fresh
``random.Random(42)``, and always uses the long-context repeats (30 / 3) where RULER takes 6 / 1 below 4,096 tokens.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

RULER_SEED = 42  # scripts/data/prepare.py's --random_seed (chunk 0): every fresh random.Random(seed) shuffle
VT_NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
VT_TEMPLATE = ("Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
               "Question: Find all variables that are assigned the value {query} in the text above.")
VT_ANSWER_PREFIX = (" Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables "
                    "are assigned the value {query}, they are: ")
VT_HOPS = 4
VT_ICL_VALUE = "12345"  # the worked example's value before it is randomised
CWE_TEMPLATE = ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
                "ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above "
                "list?")
CWE_ANSWER_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
CWE_COMMON = 10
FWE_TEMPLATE = ("Read the following coded text and track the frequency of each coded word. Find the three most "
                "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
                "the dots '....'. What are the three most frequently appeared words in the above coded text?")
FWE_ANSWER_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"
FWE_ALPHA = 2.0
FWE_NOISE = "..."  # the most frequent coded word is replaced by dots: noise, not an answer


def ruler_shuffled(items: list) -> list:
    """``random.Random(42).shuffle``, as RULER shuffles its word lists (the same permutation for a given length)."""
    import random

    shuffled = list(items)
    random.Random(RULER_SEED).shuffle(shuffled)
    return shuffled


def split_answer_prefix(text: str, prefix: str) -> tuple[str, str]:
    """RULER's final records: the prompt up to its answer prefix, found by the prefix's first 10 characters from the
    right, and the prefix (with whatever follows it)."""
    cut = text.rfind(prefix[:10])
    return text[:cut], text[cut:]


# ---- variable tracking --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Chain:
    """One chain's draws: the variable names (hops + 1), the value, where its lines go among the noise sentences
    (RULER's sorted ``random.sample`` of indices)."""

    names: tuple[str, ...]
    value: str
    positions: tuple[int, ...]

    def lines(self) -> list[str]:
        return [f"VAR {self.names[0]} = {self.value}",
                *(f"VAR {self.names[j + 1]} = VAR {self.names[j]} " for j in range(len(self.names) - 1))]


def vt_text(noises: int, chain: Chain) -> str:
    """variable_tracking.py's generate_input_output with the noise haystack and one chain: the prompt with its answer
    prefix."""
    sentences = [VT_NOISE] * noises
    for j, (position, line) in enumerate(zip(chain.positions, chain.lines())):
        sentences.insert(position + j, line)
    context = "\n".join(sentences).replace(". \n", ".\n")
    template = VT_TEMPLATE + VT_ANSWER_PREFIX
    return template.format(context=context, query=chain.value, num_v=len(chain.names))


def vt_worked_example(noises: int, chain: Chain) -> str:
    """The worked example as RULER prepends it: its prompt (3-letter names, the value 12345), a space, its answer and
    a newline."""
    return vt_text(noises, chain) + " " + " ".join(chain.names) + "\n"


def vt_randomised(example: str, names: tuple[str, ...], value: str) -> str:
    """randomize_icl: the example's last hops + 1 words (its answer) each replaced everywhere by a new name of its
    length, in order, then its value by a new value."""
    for old, new in zip(example.strip().split()[-len(names):], names):
        example = example.replace(old, new)
    return example.replace(VT_ICL_VALUE, value)


def vt_record(noises: int, chain: Chain, example: str) -> dict:
    """A final VT record: the randomised worked example before the task's template, the answer prefix apart."""
    text = vt_text(noises, chain)
    cut = text.index(VT_TEMPLATE[:20])
    text = text[:cut] + example + "\n" + text[cut:]
    prompt, prefix = split_answer_prefix(text, VT_ANSWER_PREFIX)
    return {"input": prompt, "answer_prefix": prefix, "outputs": list(chain.names)}


# ---- common words extraction --------------------------------------------------------------------------------------

def cwe_repeats(length: int) -> tuple[tuple[int, int, int], tuple[int, int]]:
    """((words, common repeats, uncommon repeats) of the worked example, (common, uncommon) repeats of the task):
    RULER's below and from 4,096 tokens."""
    return ((20, 3, 1), (6, 1)) if length < 4096 else ((40, 10, 3), (30, 3))


def numbered(words: list[str]) -> str:
    return " ".join(f"{i + 1}. {word}" for i, word in enumerate(words))


def cwe_list(words: list[str], common_repeats: int, uncommon_repeats: int) -> tuple[str, list[str]]:
    """get_example from its drawn words: the first 10 common, repeated and shuffled into a numbered list."""
    common, uncommon = words[:CWE_COMMON], words[CWE_COMMON:]
    return numbered(ruler_shuffled(common * common_repeats + uncommon * uncommon_repeats)), common


def cwe_record(length: int, example_words: list[str], words: list[str]) -> dict:
    """One CWE record from the worked example's drawn words and the task's."""
    (_, example_common, example_uncommon), (common, uncommon) = cwe_repeats(length)
    template = CWE_TEMPLATE + CWE_ANSWER_PREFIX
    example_context, example_answer = cwe_list(example_words, example_common, example_uncommon)
    example = template.format(context=example_context, query="") + " " + numbered(example_answer)
    context, answer = cwe_list(words, common, uncommon)
    prompt, prefix = split_answer_prefix(example + "\n" + template.format(context=context, query=""),
                                         CWE_ANSWER_PREFIX)
    return {"input": prompt, "answer_prefix": prefix, "outputs": answer}


# ---- frequent words extraction ------------------------------------------------------------------------------------

def fwe_vocabulary(drawn: list[str]) -> list[str]:
    """The coded words as RULER ranks them: the distinct draws sorted, shuffled with Random(42), the first made
    noise."""
    vocabulary = ruler_shuffled(sorted(set(drawn)))
    vocabulary[0] = FWE_NOISE
    return vocabulary


def fwe_counts(words: int, vocabulary_size: int) -> np.ndarray:
    """How often each ranked word appears: words * k^-alpha / zeta(alpha), truncated (RULER's float64 arithmetic)."""
    from scipy.special import zeta

    k = np.arange(1, vocabulary_size + 1)
    return (words * (k ** -FWE_ALPHA) / zeta(FWE_ALPHA)).astype(int)


def fwe_record(words: int, vocabulary: list[str]) -> dict:
    """gen_text: every ranked word its Zipf count of times, shuffled with Random(42); the answer is ranks 2-4."""
    text = [w for w, count in zip(vocabulary, fwe_counts(words, len(vocabulary))) for _ in range(count)]
    full = (FWE_TEMPLATE + FWE_ANSWER_PREFIX).format(context=" ".join(ruler_shuffled(text)), query="")
    prompt, prefix = split_answer_prefix(full, FWE_ANSWER_PREFIX)
    return {"input": prompt, "answer_prefix": prefix, "outputs": vocabulary[1:4]}


def coded_word(rng, length: int = 6) -> str:
    """One of FWE's coded words (or, upper-case, a VT name): RULER's ``random.choices`` of letters."""
    return "".join(rng.choices(string.ascii_lowercase, k=length))
