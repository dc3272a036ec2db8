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


def _example(story: str, answer: str) -> str:
    return f"<example>\n{story}\nAnswer: {answer}\n</example>"


def _examples(*pairs: tuple[str, str], joiner: str = "\n", end: str = "") -> str:
    """The examples, as the reference joins and ends them (qa6-qa20's end in a newline, some in ``<context>``)."""
    return joiner.join(_example(story, answer) for story, answer in pairs) + end


_MOVES = ("I give you context with the facts about locations and actions of different persons hidden in some random "
          "text and a question.")
_CARRY = ("If a person got an item in the first location and travelled to the second location the item is also in "
          "the second location. If a person dropped an item in the first location and moved to the second location "
          "the item remains in the first location.")
_ONLY_FACTS = "You need to answer the question based only on the information from the facts."
_LATEST = "If a person was in different locations, use the latest location the person was in to answer the question."
_PEOPLE_PLACES = ("I will give you context with the facts about people and their locations hidden in some random text "
                  f"and a question. {_ONLY_FACTS} {_LATEST}")
_CARRYING = ("I will give you context with the facts about people and objects they carry, hidden in some random text "
             f"and a question. {_ONLY_FACTS}")
_ANIMALS = ("I will give you context with the facts about animals, their names and {what}. The facts and a question "
            f"are hidden in some random text. {_ONLY_FACTS}")
_HIDDEN = "I will give you context with the facts about {what}, hidden in some random text and a question. " + _ONLY_FACTS
_NOTHING_ELSE = "Do not write anything else after that. Do not explain your answer."
_ONE_WORD = "Your answer should contain only one word - {what}. " + _NOTHING_ELSE
_YES_NO = "Your answer should contain only one word - $yes$ or $no$. Do not write anything else. Do not explain your answer."
_IN_CONTEXT = "\n<context>\n"  # qa10-qa16 and qa20's examples end so in the reference: the template adds its own

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
    "qa6": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("John travelled to the hallway. John travelled to the garden. Is John in the garden?", "yes"),
                  ("Mary went to the office. Daniel journeyed to the hallway. Mary went to the bedroom. Sandra went to "
                   "the garden. Is Mary in the office?", "no"), end="\n"),
        _ONE_WORD.format(what="$yes$ or $no$")),
    "qa7": TaskPrompt(
        _CARRYING,
        _examples(("Daniel went to the bedroom. Daniel got the apple there. How many objects is Daniel carrying?",
                   "one"),
                  ("Mary grabbed the apple there. Mary gave the apple to John. How many objects is Mary carrying?",
                   "none"),
                  ("Sandra travelled to the hallway. Sandra picked up the milk there. Sandra took the apple there. Mary "
                   "travelled to the garden. How many objects is Sandra carrying?", "two"), end="\n"),
        _ONE_WORD.format(what="$none$ or $number_of_objects$")),
    "qa8": TaskPrompt(
        _CARRYING,
        _examples(("Sandra travelled to the garden. Mary grabbed the milk there. What is Mary carrying?", "milk"),
                  ("Mary travelled to the kitchen. Sandra travelled to the office. John travelled to the office. "
                   "Sandra discarded the milk there. What is Sandra carrying?", "nothing"),
                  ("Daniel grabbed the apple there. Mary went to the office. Daniel moved to the garden. Daniel grabbed "
                   "the milk there. Mary went to the kitchen. What is Daniel carrying?", "apple,milk"), end="\n"),
        "Your answer should contain only one or two words: $nothing$ or $object$ or $object_1$, $object_2$. Do not "
        "write anything else. Do not explain your answer."),
    "qa9": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("John is not in the bathroom. Sandra is not in the bedroom. Is John in the bathroom?", "no"),
                  ("Mary journeyed to the kitchen. John is in the bedroom. Sandra is not in the garden. Is Mary in the "
                   "kitchen?", "yes"), end="\n"),
        _YES_NO),
    "qa10": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("Bill is in the kitchen. Julie is either in the school or the cinema. Is Bill in the bedroom?",
                   "no"),
                  ("Fred is in the bedroom. Mary is either in the school or the cinema. Is Mary in the school?",
                   "maybe"),
                  ("Fred is either in the kitchen or the park. Bill moved to the cinema. Is Bill in the cinema?",
                   "yes"), end=_IN_CONTEXT),
        "Your answer should contain only one word - $yes$ or $no$ or $maybe$. Do not write anything else. Do not "
        "explain your answer."),
    "qa11": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("Daniel journeyed to the hallway. After that he journeyed to the garden. Where is Daniel?",
                   "garden"),
                  ("Mary moved to the office. Afterwards she journeyed to the kitchen. Daniel went to the hallway. Then "
                   "he journeyed to the garden. Where is Mary?", "kitchen"),
                  ("Sandra moved to the kitchen. After that she went back to the hallway. Sandra moved to the bedroom. "
                   "Then she went to the hallway. Mary moved to the bedroom. Afterwards she travelled to the bathroom. "
                   "Where is Sandra?", "hallway"), end=_IN_CONTEXT),
        _ONE_WORD.format(what="location")),
    "qa12": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("Mary and Daniel travelled to the bathroom. John and Daniel travelled to the office. Where is "
                   "Daniel?", "office"),
                  ("Sandra and Mary went back to the office. Daniel and Sandra went to the bedroom. Sandra and Mary "
                   "travelled to the hallway. John and Mary went to the kitchen. Where is Mary?", "kitchen"),
                  ("Daniel and Sandra went back to the hallway. Daniel and John moved to the office. Daniel and John "
                   "moved to the garden. Daniel and Mary went back to the bathroom. Daniel and John went back to the "
                   "kitchen. Daniel and Sandra went to the bathroom. Where is John?", "kitchen"), end=_IN_CONTEXT),
        _ONE_WORD.format(what="location")),
    "qa13": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("Mary and Daniel travelled to the bathroom. Then they journeyed to the hallway. Where is Daniel?",
                   "hallway"),
                  ("Daniel and Sandra travelled to the kitchen. After that they journeyed to the hallway. Mary and "
                   "Daniel travelled to the bedroom. After that they travelled to the hallway. Where is Sandra?",
                   "hallway"),
                  ("John and Mary moved to the bathroom. Then they travelled to the office. John and Mary went to the "
                   "kitchen. Afterwards they went to the bedroom. John and Sandra moved to the bathroom. Following "
                   "that they went back to the kitchen. Where is Mary?", "bedroom"), end=_IN_CONTEXT),
        _ONE_WORD.format(what="location")),
    "qa14": TaskPrompt(
        _PEOPLE_PLACES,
        _examples(("Bill went back to the cinema yesterday. Julie went to the school this morning. Fred went to the "
                   "park yesterday. Yesterday Julie went to the office. Where was Julie before the school?", "office"),
                  ("This morning Fred went to the kitchen. Fred journeyed to the bedroom yesterday. Mary travelled to "
                   "the bedroom this morning. Yesterday Mary went to the cinema. Where was Mary before the bedroom?",
                   "cinema"),
                  ("Yesterday Julie went back to the park. Julie went to the bedroom this morning. Bill journeyed to "
                   "the cinema yesterday. This morning Bill went back to the park. This evening Julie went to the "
                   "school. This afternoon Julie went back to the park. Where was Julie before the bedroom?", "park"),
                  end=_IN_CONTEXT),
        _ONE_WORD.format(what="location")),
    "qa15": TaskPrompt(
        _ANIMALS.format(what="relations"),
        _examples(("Mice are afraid of wolves. Gertrude is a mouse. Cats are afraid of sheep. Winona is a mouse. "
                   "Sheep are afraid of wolves. Emily is a mouse. Jessica is a wolf. What is gertrude afraid of?",
                   "wolf"),
                  ("Mice are afraid of wolves. Gertrude is a mouse. Cats are afraid of sheep. Winona is a mouse. "
                   "Sheep are afraid of wolves. Emily is a mouse. Jessica is a wolf. What is jessica afraid of?",
                   "cat"),
                  ("Mice are afraid of cats. Wolves are afraid of sheep. Emily is a wolf. Cats are afraid of sheep. "
                   "Gertrude is a wolf. Sheep are afraid of cats. Winona is a wolf. What is emily afraid of?", "sheep"),
                  end=_IN_CONTEXT),
        _ONE_WORD.format(what="an animal species")),
    "qa16": TaskPrompt(
        _ANIMALS.format(what="colors"),
        _examples(("Lily is a frog. Bernhard is a frog. Bernhard is green. Brian is a lion. Brian is white. Julius is "
                   "a swan. Julius is green. Lily is green. Greg is a swan. What color is Greg?", "green"),
                  ("Julius is a lion. Lily is a rhino. Bernhard is a swan. Lily is white. Bernhard is green. Greg is a "
                   "rhino. Greg is gray. Julius is white. Brian is a lion. What color is Brian?", "white"),
                  ("Brian is a rhino. Julius is a lion. Bernhard is a lion. Greg is a swan. Brian is gray. Greg is "
                   "white. Lily is a rhino. Bernhard is yellow. Lily is gray. What color is Julius?", "yellow"),
                  end=_IN_CONTEXT),
        _ONE_WORD.format(what="a color")),
    # qa17 and qa18: the reference writes no newline before their second and third examples
    "qa17": TaskPrompt(
        _HIDDEN.format(what="different figures, their location and colors"),
        _example("The triangle is above the pink rectangle. The blue square is to the left of the triangle. Is the "
                 "pink rectangle to the right of the blue square?", "yes") + "\n"
        + _examples(("The red sphere is to the left of the yellow square. The red sphere is below the pink rectangle. "
                     "Is the pink rectangle to the left of the yellow square?", "yes"),
                    ("The red sphere is above the pink rectangle. The red sphere is to the right of the red square. "
                     "Is the pink rectangle above the red square?", "no"), joiner=""),
        _YES_NO),
    "qa18": TaskPrompt(
        _HIDDEN.format(what="different objects and their sizes"),
        _example("The box of chocolates fits inside the chest. The box is bigger than the chest. The box is bigger "
                 "than the suitcase. The suitcase fits inside the box. The container is bigger than the box of "
                 "chocolates. Does the box fit in the box of chocolates?", "no") + "\n"
        + _examples(("The suitcase is bigger than the container. The container fits inside the box. The chest is "
                     "bigger than the chocolate.The suitcase fits inside the box. The chest fits inside the box. Does "
                     "the chocolate fit in the box?", "yes"),  # sic: no space after "chocolate."
                    ("The chocolate fits inside the box of chocolates. The suitcase fits inside the box. The chocolate "
                     "fits inside the box. The box is bigger than the box of chocolates. The suitcase is bigger than "
                     "the box of chocolates. Is the chocolate bigger than the box?", "no"), joiner=""),
        _YES_NO),
    "qa19": TaskPrompt(
        _HIDDEN.format(what="different places and their locations"),
        _examples(("The office is east of the hallway. The kitchen is north of the office. The garden is west of the "
                   "bedroom. The office is west of the garden. The bathroom is north of the garden. How do you go from "
                   "the kitchen to the garden?", "s,e"),
                  ("The bedroom is west of the hallway. The office is east of the garden. The garden is north of the "
                   "kitchen. The kitchen is north of the bathroom. The hallway is west of the garden. How do you go "
                   "from the kitchen to the hallway?", "n,w"),
                  ("The bedroom is south of the hallway. The bathroom is east of the office. The kitchen is west of "
                   "the garden. The garden is south of the office. The office is south of the bedroom. How do you go "
                   "from the garden to the bedroom?", "n,n"), end="\n"),
        "Your answer should contain only two letters, separated by a comma - ordinal directions. You can choose the "
        "letters from $n$, $s$, $e$ and $w$. Do not write anything else after that."),
    "qa20": TaskPrompt(
        "I will give you context with the facts about people, their locations and condition hidden in some random text "
        f"and a question. {_ONLY_FACTS} {_LATEST}",
        _examples(("Sumit is tired. Where will sumit go?", "bedroom"),
                  ("Yann is hungry. Yann journeyed to the kitchen. Why did yann go to the kitchen?", "hungry"),
                  ("Antoine is thirsty. Yann is tired. Yann went back to the bedroom. Yann picked up the pajamas "
                   "there.Jason is thirsty. Antoine went back to the kitchen. Why did antoine go to the kitchen?",
                   "thirsty"),  # sic: no space after "there."
                  end=_IN_CONTEXT),
        _ONE_WORD.format(what="a person condition or a place")),
}


def formatted_input(task: str, context: str, question: str, instruction: bool = True, examples: bool = True,
                    post_prompt: bool = True) -> str:
    """The prompt the reference gives a model: the template filled (the context stripped), then the whole stripped."""
    parts = PROMPTS[task]
    return TEMPLATE.format(instruction=parts.instruction if instruction else "",
                           examples=parts.examples if examples else "",
                           post_prompt=parts.post_prompt if post_prompt else "",
                           context=context.strip(), question=question).strip()
