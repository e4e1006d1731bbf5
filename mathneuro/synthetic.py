"""Synthetic stand-ins for GSM8K, RACE and MMLU, generated offline under a seed.

The embedded toy default of MathNeuro trains a tiny causal LM on three synthetic
skills and then looks for the parameters that are specific to one of them (math).
Every generator is a pure function of ``(task, n_train, n_test, seed)``; records are
plain dicts with a stable string ``"id"`` such as ``"math-test-00042"``.

Tasks
-----
``"math"`` (mirrors GSM8K)
    Short word problems with one multi-digit operation: two-digit addition,
    two-digit subtraction, or a two-digit number times a one-digit number.
    Fields: ``question``, ``answer`` (a worked, digit-by-digit solution whose last
    line is ``#### <number>``) and ``target`` (the number as a string). No
    ``(operation, a, b)`` triple of the test split occurs in the train split.

``"math_reworded"`` (a held-out variant of math, for generalisation)
    The same operations, operand ranges and worked answers as ``"math"``, asked in
    wordings that ``"math"`` never uses (other sentence frames, other cue words for the
    operation: "altogether", "taken out", "rows"). The default trains the toy model on
    it but never identifies on it: it measures whether the set found on math text
    reaches math the identification never saw, as the paper's MATH and EGSM
    evaluations do for sets found on GSM8K. (Never trained on, ``n_train: 0``, the toy
    answers none of it: it knows its training wordings only.)

``"reading"`` (mirrors RACE)
    A short story of two to four sentences, each about a different person and a
    different kind of detail, followed by one question about one detail. Half the kinds
    are words (where they went, their pet, the colour of their coat, what they ate), half
    are numbers (their age, how many of an item they have, the year they were born, what
    they paid), so a story usually states numbers and half the questions are answered by a
    number read from the story, never computed. Details are drawn at random per story, so
    the answer cannot be memorised: the model must find it in the story. The three
    distractors are details of the same kind that are not in the story. Train and test
    stories are drawn independently and no test prompt occurs in the train split.

``"facts"`` (mirrors MMLU)
    Closed-book recall from a fixed knowledge base generated from the seed:
    invented creatures (``"the zorbel"``), each with four word attributes (a home, a
    colour, a food, a sound) and four numeric ones (its legs, lifespan in years, length
    in centimetres, the year it was first seen); ``ceil(n_test / 8)`` creatures (at least
    16), so nearly every fact is tested. Every relation can be asked in three phrasings. For a fact that is in the
    test split, one phrasing is held out for the test question and the other two
    appear (with independent distractors) in training; facts not in the test split
    are trained in all phrasings. The model therefore learns every fact in training
    but is tested on a question wording it never saw for that fact (it did see the
    wording for other facts), so train and test prompts are disjoint.

Multiple-choice records (reading, facts) have ``question`` (the full prompt text,
including the story), ``choices`` (list of str), ``label`` (index of the correct
choice), ``answer`` (the correct choice text) and ``numeric`` (whether the answer is a
number: the item asks for a number read from the story or recalled, which the evaluation
reports apart as ``toy_reading_numbers`` and ``toy_facts_numbers``).

Numbers in every task, computing in one: the controls state and ask numbers as real text
does (RACE stories and MMLU questions hold years, counts and measures), so reading digits
is no skill of math alone; only math *computes* (its worked answers and the symbols
``+ - * = < #`` occur in math alone). A set found as math minus reading can then not be
"the entries that read digits" without costing reading's numeric items, which the
tables show apart.
``prompt_text`` and ``training_text`` define the exact text format shared by the
trainer (``mathneuro.toy``) and the lm-eval task YAMLs (``mathneuro.evaluate``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

Record = dict[str, Any]

# Sub-skills of math: math's own records of one operation (same draw, filtered), so their test
# items are math's held-out ones and their train items texts the toy model has trained on.
OPERATIONS = {"math_add": "add", "math_sub": "sub", "math_mul": "mul"}
TASKS = ("math", "math_reworded", "reading", "facts", *OPERATIONS)
SPLITS = ("train", "test")

NAMES = (
    "Mira", "Tobin", "Asha", "Leo", "Nina", "Omar", "Ruth", "Ivan", "Zara", "Hugo",
    "Lena", "Milo", "Tara", "Felix", "Ada", "Emil", "Iris", "Jonas", "Kira", "Paul",
    "Rosa", "Sam", "Vera", "Yusuf",
)
PRONOUNS = {name: ("She" if i % 2 == 0 else "He") for i, name in enumerate(NAMES)}
ITEMS = (
    "apples", "marbles", "stickers", "shells", "coins", "pencils", "cookies", "stamps",
    "books", "eggs", "cards", "beads",
)
CONTAINERS = ("boxes", "bags", "jars", "packs", "baskets")

def _numbers(low: int, high: int, step: int = 1) -> tuple[str, ...]:
    """The numbers from ``low`` to ``high`` (inclusive) as strings: a numeric relation's values,
    all of one length, so no choice of an item is likelier for being shorter."""
    return tuple(str(v) for v in range(low, high + 1, step))


# reading: relation -> (sentence template, question template, values); the last four are numbers
READING_RELATIONS = {
    "place": ("{name} went to the {value}.", "Where did {name} go?",
              ("market", "river", "garden", "forest", "library", "beach", "farm",
               "castle", "harbor", "museum")),
    "pet": ("{name} has a pet {value}.", "What pet does {name} have?",
            ("cat", "dog", "rabbit", "parrot", "turtle", "goat", "horse", "mouse",
             "duck", "hamster")),
    "color": ("{name} wore a {value} coat.", "What color was the coat of {name}?",
              ("red", "blue", "green", "yellow", "purple", "orange", "black", "white",
               "brown", "pink")),
    "food": ("{name} ate some {value}.", "What did {name} eat?",
             ("bread", "soup", "rice", "cheese", "pears", "plums", "noodles", "cake",
              "honey", "grapes")),
    "age": ("{name} is {value} years old.", "How old is {name}?", _numbers(10, 89)),
    "count": ("{name} has {value} marbles.", "How many marbles does {name} have?", _numbers(10, 99)),
    "born": ("{name} was born in {value}.", "In which year was {name} born?", _numbers(1900, 2019)),
    "price": ("{name} paid {value} coins for a lamp.", "How many coins did {name} pay for the lamp?",
              _numbers(10, 99)),
}

# facts: relation -> (three question phrasings, values); the last four are numbers
FACT_RELATIONS = {
    "home": (("Where does the {entity} live?",
              "In which place does the {entity} make its home?",
              "What is the home of the {entity}?"),
             ("swamp", "desert", "jungle", "tundra", "valley", "cliff", "lake",
              "meadow", "cave", "reef")),
    "hue": (("What color is the {entity}?",
             "Which color does the {entity} have?",
             "The {entity} is known for which color?"),
            ("silver", "golden", "violet", "crimson", "teal", "amber", "gray",
             "ivory", "scarlet", "indigo")),
    "diet": (("What does the {entity} eat?",
              "Which food does the {entity} like best?",
              "The {entity} feeds mainly on what?"),
             ("moss", "insects", "seeds", "roots", "worms", "berries", "fish",
              "nectar", "bark", "snails")),
    "call": (("What sound does the {entity} make?",
              "Which noise comes from the {entity}?",
              "How does the {entity} call out?"),
             ("hoot", "chirp", "growl", "hiss", "whistle", "squeak", "roar", "buzz",
              "croak", "howl")),
    "legs": (("How many legs does the {entity} have?",
              "The {entity} walks on how many legs?",
              "What is the number of legs of the {entity}?"),
             _numbers(2, 8, 2)),
    "lifespan": (("How many years does the {entity} live?",
                  "What is the lifespan of the {entity} in years?",
                  "For how many years can the {entity} live?"),
                 _numbers(10, 99)),
    "length": (("How long is the {entity} in centimetres?",
                "What is the length of the {entity} in centimetres?",
                "How many centimetres long is the {entity}?"),
               _numbers(10, 95)),
    "found": (("In which year was the {entity} first seen?",
               "When was the {entity} first seen?",
               "The {entity} was first seen in which year?"),
              _numbers(1700, 1999)),
}
ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
          "br", "gl", "kr", "pl", "st", "th", "tr", "sk")
VOWELS = ("a", "e", "i", "o", "u")
CODAS = ("", "l", "n", "r", "x", "m", "s")
N_CHOICES = 4
MIN_ENTITIES = 16


# ---------------------------------------------------------------- text formats
# The prompt of each task, one place: the toy model trains on prompt + " " + answer, lm-eval's
# task YAMLs (mathneuro.evaluate) render the same prompt, and config.yaml's data set templates
# must render the training text (tested).
PROMPTS = {"math": "Question: {question}\nAnswer:", "math_reworded": "Question: {question}\nAnswer:", "reading": "{question}\nAnswer:", "facts": "{question}\nAnswer:"}
PROMPTS |= {task: PROMPTS["math"] for task in OPERATIONS}


def prompt_text(task: str, record: Record) -> str:
    """Return the evaluation prompt of ``record``."""
    check_task(task)
    return PROMPTS[task].format(question=record["question"])


def target_text(task: str, record: Record) -> str:
    """Return the gold continuation of ``record`` (what follows the prompt after a space)."""
    check_task(task)
    return record["answer"]


def training_text(task: str, record: Record) -> str:
    """Return the full training text: prompt, one space, gold continuation."""
    return f"{prompt_text(task, record)} {target_text(task, record)}"


# ---------------------------------------------------------------- math
def _add_steps(a: int, b: int) -> list[str]:
    """Digit-by-digit column addition of two two-digit numbers."""
    ones = a % 10 + b % 10
    if ones >= 10:
        return [f"{a % 10} + {b % 10} = {ones}, carry 1.",
                f"{a // 10} + {b // 10} + 1 = {a // 10 + b // 10 + 1}."]
    return [f"{a % 10} + {b % 10} = {ones}.", f"{a // 10} + {b // 10} = {a // 10 + b // 10}."]


def _sub_steps(a: int, b: int) -> list[str]:
    """Digit-by-digit column subtraction ``a - b`` with ``a > b``."""
    if a % 10 < b % 10:
        return [f"{a % 10} < {b % 10}, borrow: {a % 10 + 10} - {b % 10} = {a % 10 + 10 - b % 10}.",
                f"{a // 10} - 1 - {b // 10} = {a // 10 - 1 - b // 10}."]
    return [f"{a % 10} - {b % 10} = {a % 10 - b % 10}.", f"{a // 10} - {b // 10} = {a // 10 - b // 10}."]


def _mul_steps(a: int, b: int) -> list[str]:
    """Digit-by-digit multiplication of a two-digit ``a`` by a one-digit ``b``."""
    ones, partial = (a % 10) * b, (a // 10) * b
    carry = ones // 10
    return [f"{a % 10} * {b} = {ones}, carry {carry}.",
            f"{a // 10} * {b} = {partial}, {partial} + {carry} = {partial + carry}."]


def _worked_answer(op: str, a: int, b: int) -> tuple[str, int]:
    """The worked, digit-by-digit answer ending in ``#### <result>``, and the result."""
    result, sym, steps = {"add": (a + b, "+", _add_steps), "sub": (a - b, "-", _sub_steps),
                          "mul": (a * b, "*", _mul_steps)}[op]
    lines = [f"We need {a} {sym} {b}.", *steps(a, b), f"So {a} {sym} {b} = {result}.", f"#### {result}"]
    return "\n".join(lines), result


def _math_problem(rng: random.Random, op: str, a: int, b: int) -> tuple[str, str, int]:
    """Return ``(question, worked answer, result)`` for one operation on ``a`` and ``b``."""
    name, other = rng.sample(NAMES, 2)
    pron, item = PRONOUNS[name], rng.choice(ITEMS)
    if op == "add":
        question = (f"{name} has {a} {item}. {pron} gets {b} more from {other}. "
                    f"How many {item} does {name} have now?")
    elif op == "sub":
        question = (f"{name} has {a} {item}. {pron} gives {b} to {other}. "
                    f"How many {item} does {name} have left?")
    else:
        box = rng.choice(CONTAINERS)
        question = (f"{name} buys {b} {box} of {item}. Each holds {a} {item}. "
                    f"How many {item} does {name} buy?")
    return (question, *_worked_answer(op, a, b))


# math_reworded: operation -> question frames that the math task never uses
REWORDED = {
    "add": ("A box holds {a} {item} and a bag holds {b} {item}. How many {item} are there altogether?",
            "On Monday {name} counted {a} {item} and on Tuesday {b} {item}. What is the total number of {item}?"),
    "sub": ("A jar held {a} {item}. Then {b} of them were taken out. How many {item} are still in the jar?",
            "{name} needs {a} {item} but only {b} are ready. How many {item} are missing?"),
    "mul": ("There are {b} rows with {a} {item} in each row. How many {item} are there in all?",
            "{name} fills {b} {box} with {a} {item} each. How many {item} is that?"),
}


def _reworded_problem(rng: random.Random, op: str, a: int, b: int) -> tuple[str, str, int]:
    """A math problem in one of ``REWORDED``'s frames, with the math task's worked answer."""
    frame = rng.choice(REWORDED[op])
    question = frame.format(a=a, b=b, name=rng.choice(NAMES), item=rng.choice(ITEMS), box=rng.choice(CONTAINERS))
    return (question, *_worked_answer(op, a, b))


def _math_operands(rng: random.Random) -> tuple[str, int, int]:
    """Draw one ``(operation, a, b)`` triple."""
    op = rng.choice(("add", "sub", "mul"))
    if op == "mul":
        return op, rng.randint(10, 99), rng.randint(2, 9)
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    if op == "sub":
        while a == b:
            b = rng.randint(10, 99)
        a, b = max(a, b), min(a, b)
    return op, a, b


def _math_record(rng: random.Random, split: str, index: int,
                 key: tuple[str, int, int], task: str = "math") -> Record:
    problem = _reworded_problem if task == "math_reworded" else _math_problem
    question, answer, result = problem(rng, *key)
    return {"id": f"{task}-{split}-{index:05d}", "question": question, "answer": answer,
            "target": str(result)}


def _generate_math(n_train: int, n_test: int, rng: random.Random,
                   task: str = "math", operation: str | None = None) -> dict[str, list[Record]]:
    """Math records; with ``operation``, those of the same draw that use it (ids unchanged)."""
    test_keys: list[tuple[str, int, int]] = []
    seen: set[tuple[str, int, int]] = set()
    while len(test_keys) < n_test:
        key = _math_operands(rng)
        if key not in seen:
            seen.add(key)
            test_keys.append(key)
    test = [_math_record(rng, "test", i, k, task) for i, k in enumerate(test_keys)]
    train, train_keys = [], []
    while len(train) < n_train:
        key = _math_operands(rng)
        if key not in seen:
            train.append(_math_record(rng, "train", len(train), key, task))
            train_keys.append(key)
    if operation is None:
        return {"train": train, "test": test}
    keep = lambda records, keys: [r for r, k in zip(records, keys) if k[0] == operation]  # noqa: E731
    return {"train": keep(train, train_keys), "test": keep(test, test_keys)}


# ---------------------------------------------------------------- multiple choice
def _mc_record(record_id: str, question: str, correct: str, distractors: list[str],
               rng: random.Random) -> Record:
    """Assemble a multiple-choice record with the correct answer at a random position."""
    choices = [correct, *distractors[: N_CHOICES - 1]]
    rng.shuffle(choices)
    return {"id": record_id, "question": question, "choices": choices,
            "label": choices.index(correct), "answer": correct, "numeric": correct.isdigit()}


def _reading_record(rng: random.Random, split: str, index: int) -> Record:
    """A story of 2-4 people, each with a detail of a different kind; ask about one."""
    n_people = rng.randint(2, 4)
    relations = rng.sample(sorted(READING_RELATIONS), n_people)
    people = rng.sample(NAMES, n_people)
    story_values = [rng.choice(READING_RELATIONS[r][2]) for r in relations]
    story = " ".join(READING_RELATIONS[r][0].format(name=p, value=v)
                     for r, p, v in zip(relations, people, story_values))
    asked = rng.randrange(n_people)
    _, ask, values = READING_RELATIONS[relations[asked]]
    told = set(story_values)  # no distractor is a detail the story states, of any kind
    distractors = rng.sample([v for v in values if v not in told], N_CHOICES - 1)
    question = f"{story}\nQuestion: {ask.format(name=people[asked])}"
    return _mc_record(f"reading-{split}-{index:05d}", question, story_values[asked],
                      distractors, rng)


def _generate_reading(n_train: int, n_test: int, rng: random.Random) -> dict[str, list[Record]]:
    test = [_reading_record(rng, "test", i) for i in range(n_test)]
    test_prompts = {r["question"] for r in test}
    train: list[Record] = []
    while len(train) < n_train:
        record = _reading_record(rng, "train", len(train))
        if record["question"] not in test_prompts:
            train.append(record)
    return {"train": train, "test": test}


def _entity_names(rng: random.Random, n: int) -> list[str]:
    """Invent ``n`` distinct two-syllable creature names (letters only)."""
    names: set[str] = set()
    while len(names) < n:
        syllables = [rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(2)]
        names.add("".join(syllables) + rng.choice(CODAS))
    return sorted(names)


def knowledge_base(seed: int, n_entities: int) -> list[tuple[str, str, str]]:
    """Return the facts ``(entity, relation, value)`` of the seed's invented world."""
    rng = random.Random(f"facts-kb-{seed}")
    facts = []
    for entity in _entity_names(rng, n_entities):
        for relation in sorted(FACT_RELATIONS):
            facts.append((entity, relation, rng.choice(FACT_RELATIONS[relation][1])))
    return facts


def _fact_record(rng: random.Random, record_id: str, fact: tuple[str, str, str],
                 phrasing: int) -> Record:
    entity, relation, value = fact
    templates, values = FACT_RELATIONS[relation]
    question = f"Question: {templates[phrasing].format(entity=entity)}"
    distractors = rng.sample([v for v in values if v != value], N_CHOICES - 1)
    return _mc_record(record_id, question, value, distractors, rng)


def _generate_facts(n_train: int, n_test: int, seed: int,
                    rng: random.Random) -> dict[str, list[Record]]:
    n_entities = max(MIN_ENTITIES, -(-n_test // len(FACT_RELATIONS)))
    facts = knowledge_base(seed, n_entities)
    test_facts = set(rng.sample(range(len(facts)), n_test))
    held_out = {i: rng.randrange(3) for i in sorted(test_facts)}
    test = [_fact_record(rng, f"facts-test-{j:05d}", facts[i], p)
            for j, (i, p) in enumerate(held_out.items())]
    pairs = [(i, p) for i in range(len(facts)) for p in range(3) if held_out.get(i) != p]
    train: list[Record] = []
    while len(train) < n_train:
        for i, p in rng.sample(pairs, len(pairs)):
            if len(train) == n_train:
                break
            train.append(_fact_record(rng, f"facts-train-{len(train):05d}", facts[i], p))
    return {"train": train, "test": test}


# ---------------------------------------------------------------- public API
def trained_tasks(tasks: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Of a config's synthetic tasks (task -> sizes), those a toy model trains on: the ones with
    train texts of their own (not math's operation tasks, which hold math's records again)."""
    return sorted(t for t, size in tasks.items() if size["n_train"] > 0 and t not in OPERATIONS)


def check_task(task: str) -> None:
    """Raise ``ValueError`` unless ``task`` is one of ``TASKS``."""
    if task not in TASKS:
        raise ValueError(f"unknown synthetic task {task!r}; expected one of {TASKS}")


def generate(task: str, *, n_train: int, n_test: int, seed: int) -> dict[str, list[Record]]:
    """Generate ``{"train": [...], "test": [...]}`` records of ``task`` under ``seed``. A math
    operation's task (``OPERATIONS``) holds the records of math's draw with the same sizes and
    seed that use that operation, so its sizes must be math's."""
    check_task(task)
    if n_train < 0 or n_test < 0:
        raise ValueError(f"n_train and n_test must be >= 0, got {n_train}, {n_test}")
    rng = random.Random(f"{'math' if task in OPERATIONS else task}-{seed}")
    generators: dict[str, Callable[[], dict[str, list[Record]]]] = {
        "math": lambda: _generate_math(n_train, n_test, rng),
        "math_reworded": lambda: _generate_math(n_train, n_test, rng, "math_reworded"),
        "reading": lambda: _generate_reading(n_train, n_test, rng),
        "facts": lambda: _generate_facts(n_train, n_test, seed, rng),
        **{t: (lambda op=op: _generate_math(n_train, n_test, rng, operation=op)) for t, op in OPERATIONS.items()},
    }
    return generators[task]()


def write_jsonl(records: list[Record], path: str | Path) -> Path:
    """Write ``records`` as JSON lines to ``path`` (parents created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: str | Path) -> list[Record]:
    """Read JSON-lines records from ``path``."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_task(task: str, out_dir: str | Path, *, n_train: int, n_test: int,
               seed: int) -> dict[str, Path]:
    """Generate ``task`` and write ``{out_dir}/{task}/{split}.jsonl``; return split -> path."""
    splits = generate(task, n_train=n_train, n_test=n_test, seed=seed)
    return {split: write_jsonl(records, Path(out_dir) / task / f"{split}.jsonl")
            for split, records in splits.items()}
