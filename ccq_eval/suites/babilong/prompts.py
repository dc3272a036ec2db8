"""BABILong's prompt, as its reference builds it (``DEFAULT_TEMPLATE``, ``DEFAULT_PROMPTS`` and
``get_formatted_input`` in booydar/babilong's babilong/prompts.py): the task's instruction, its in-context examples
and its answer format, then the context between ``<context>`` tags and the question; the whole stripped. Each of the
three task parts may be left out (the reference's "no instruction / no examples / no post prompt" variants): the
template keeps its blank lines."""

from __future__ import annotations

from dataclasses import dataclass

TEMPLATE = "{instruction}\n\n{examples}\n\n{post_prompt}\n\n<context>\n{context}\n</context>\n\nQuestion: {question}"


@dataclass(frozen=True)
class TaskPrompt:
    instruction: str
    examples: str
    post_prompt: str


def _examples(*pairs: tuple[str, str], joiner: str = "\n") -> str:
    return joiner.join(f"<example>\n{story}\nAnswer: {answer}\n</example>" for story, answer in pairs)


_MOVES = ("I give you context with the facts about locations and actions of different persons hidden in some random "
          "text and a question.")
_CARRY = ("If a person got an item in the first location and travelled to the second location the item is also in "
          "the second location. If a person dropped an item in the first location and moved to the second location "
          "the item remains in the first location.")
_ONLY_FACTS = "You need to answer the question based only on the information from the facts."

PROMPTS = {
    "qa1": TaskPrompt(
        "I will give you context with the facts about positions of different persons hidden in some random text and a "
        f"question. {_ONLY_FACTS} If a person was in different locations, use the latest location to answer the "
        "question.",
        _examples(("Charlie went to the hallway. Judith come back to the kitchen. Charlie travelled to balcony. Where "
                   "is Charlie?", "The most recent location of Charlie is balcony."),
                  ("Alan moved to the garage. Charlie went to the beach. Alan went to the shop. Rouse travelled to "
                   "balcony. Where is Alan?", "The most recent location of Alan is shop."), joiner="\n\n"),
        "Always return your answer in the following format: The most recent location of ’person’ is ’location’. Do "
        "not write anything else after that."),
    "qa2": TaskPrompt(
        f"{_MOVES}{_ONLY_FACTS}\n{_CARRY}",
        _examples(("Charlie went to the kitchen. Charlie got a bottle. Charlie moved to the balcony. Where is the "
                   "bottle?", "The bottle is in the balcony."),
                  ("Alan moved to the garage. Alan got a screw driver. Alan moved to the kitchen. Where is the screw "
                   "driver?", "The screw driver is in the kitchen.")),
        "Always return your answer in the following format: The ’item’ is in ’location’. Do not write anything else "
        "after that."),
    "qa3": TaskPrompt(
        f"{_MOVES} {_ONLY_FACTS}\n{_CARRY}",
        _examples(("John journeyed to the bedroom. Mary grabbed the apple. Mary went back to the bathroom. Daniel "
                   "journeyed to the bedroom. Daniel moved to the garden. Mary travelled to the kitchen. Where was the "
                   "apple before the kitchen?", "Before the kitchen the apple was in the bathroom."),
                  ("John went back to the bedroom. John went back to the garden. John went back to the kitchen. "
                   "Sandra took the football. Sandra travelled to the garden. Sandra journeyed to the bedroom. Where "
                   "was the football before the bedroom?", "Before the bedroom the football was in the garden.")),
        "Always return your answer in the following format: Before the $location_1$ the $item$ was in the "
        "$location_2$. Do not write anything else after that."),
    "qa4": TaskPrompt(
        "I will give you context with the facts about different people, their location and actions, hidden in some "
        f"random text and a question. {_ONLY_FACTS}",
        _examples(("The hallway is south of the kitchen. The bedroom is north of the kitchen. What is the kitchen "
                   "south of?", "bedroom"),
                  ("The garden is west of the bedroom. The bedroom is west of the kitchen. What is west of the "
                   "bedroom?", "garden")),
        "Your answer should contain only one word - location. Do not write anything else after that."),
    "qa5": TaskPrompt(
        "I will give you context with the facts about locations and their relations hidden in some random text and a "
        f"question. {_ONLY_FACTS}",
        _examples(("Mary picked up the apple there. Mary gave the apple to Fred. Mary moved to the bedroom. Bill took "
                   "the milk there. Who did Mary give the apple to?", "Fred"),
                  ("Jeff took the football there. Jeff passed the football to Fred. Jeff got the milk there. Bill "
                   "travelled to the bedroom. Who gave the football?", "Jeff"),
                  ("Fred picked up the apple there. Fred handed the apple to Bill. Bill journeyed to the bedroom. Jeff "
                   "went back to the garden. What did Fred give to Bill?", "apple")),
        "Your answer should contain only one word. Do not write anything else after that. Do not explain your "
        "answer."),
}


def formatted_input(task: str, context: str, question: str, instruction: bool = True, examples: bool = True,
                    post_prompt: bool = True) -> str:
    """The prompt the reference gives a model: the template filled (the context stripped), then the whole stripped."""
    parts = PROMPTS[task]
    return TEMPLATE.format(instruction=parts.instruction if instruction else "",
                           examples=parts.examples if examples else "",
                           post_prompt=parts.post_prompt if post_prompt else "",
                           context=context.strip(), question=question).strip()
