"""The built-in chat workload: the conversations the bench sends by default.

Five domains of chat-shaped requests, written by the project and generated deterministically
from templates (no network, no external data), each sent through the served model's own chat
template (bench/chat.py):

- `coding`: a piece of a Python file and a change request or a question about it;
- `math`: grade-school word problems to solve step by step, after worked examples;
- `document`: questions, summaries and rewrites over a passage of documentation;
- `multiturn`: pasted notes, chat logs or support tickets, two earlier exchanges, a last ask;
- `json`: semi-structured records (listings, logs, orders, ...) to extract into named fields.

Every conversation holds `MATERIAL_SLOT` once, in one message, before the question it asks:
the prompt builder fills the slot with text of `material_text(conversation.material_corpus)`
from `material_offset` on, as much as the targeted context needs, and cuts from the end of the
material only, so the question after the slot survives any context length. Offsets sit at the
start of a record (a `def`, a paragraph, a problem, a meeting, a log line) and differ between
the conversations of a domain. Standard library only: this runs on the GPU host.
"""

from __future__ import annotations

import bisect
import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.builtin_texts import Material, chat_material, json_material
from bench.conversation import MATERIAL_SLOT, Conversation
from bench.prompt_sets import corpus, math_corpus

DOMAINS: tuple[str, ...] = ("coding", "math", "document", "multiturn", "json")
PER_DOMAIN = 48  # conversations per domain
MAX_TOKENS = {"coding": 512, "math": 384, "document": 256, "multiturn": 256, "json": 256}
CORPORA = ("code", "document", "math", "chat", "json")

_S = MATERIAL_SLOT


# ---------------------------------------------------------------- material corpora


def _scan(text: str, kind: str, pattern: str) -> Material:
    starts = tuple(m.start() for m in re.finditer(pattern, text, re.MULTILINE))
    return Material(text, {kind: starts})


@functools.cache
def _material(name: str) -> Material:
    if name == "code":  # CPython standard-library source; records: def and class (and methods)
        return _scan(corpus("code"), "def", r"^(?:    )?(?:def|class) (?!__|\w*Error\b)\w+")
    if name == "document":  # prose: records are paragraphs of the Python Language Reference
        text = corpus("prose")
        reference = text.index("\n==== ")
        found = _scan(text, "paragraph", r"(?<=\n\n)[A-Z][^\n]{20,}")
        return Material(
            text, {"paragraph": tuple(o for o in found.starts["paragraph"] if o > reference)}
        )
    if name == "math":  # generated worked problems; records: each problem
        return _scan(math_corpus(0), "problem", r"^Problem \d+\.")
    if name == "chat":
        return chat_material()
    if name == "json":
        return json_material()
    raise KeyError(f"no built-in material corpus {name!r} (known: {', '.join(CORPORA)})")


def material_text(name: str) -> str:
    """The text of material corpus `name` (one of CORPORA); KeyError for another name."""
    return _material(name).text


def _spread(starts: Sequence[int], n: int) -> list[int]:
    """n distinct record starts (of the sorted `starts`), evenly spread over the text they
    span: the first record at or after each of n evenly spaced positions."""
    if n > len(starts):
        raise ValueError(f"{n} conversations need {n} records, the corpus has {len(starts)}")
    lo, span = starts[0], starts[-1] - starts[0] + 1
    picked: list[int] = []
    index = 0
    for i in range(n):
        index = max(index, bisect.bisect_left(starts, lo + i * span // n))
        index = min(index, len(starts) - (n - i))  # leave a record for each one still to pick
        picked.append(starts[index])
        index += 1
    return picked


@dataclass(frozen=True)
class _Draft:
    """A conversation before its material offset is known."""

    messages: tuple[tuple[str, str], ...]
    kind: str  # the kind of record the material must start with
    chars: int  # material_chars


def _finish(domain: str, corpus_name: str, drafts: list[_Draft]) -> list[Conversation]:
    """Conversations of `drafts`, each given its own record start of the right kind (kinds
    may overlap: `incident` logs are also `chatlog`s; no start is given out twice)."""
    material = _material(corpus_name)
    offsets: dict[str, list[int]] = {}
    taken: set[int] = set()
    for kind in sorted({d.kind for d in drafts}):
        free = [o for o in material.starts[kind] if o not in taken]
        offsets[kind] = _spread(free, sum(d.kind == kind for d in drafts))
        taken.update(offsets[kind])
    out = []
    for d in drafts:
        out.append(
            Conversation(
                messages=d.messages,
                source=domain,
                max_tokens=MAX_TOKENS[domain],
                material_corpus=corpus_name,
                material_offset=offsets[d.kind].pop(0),
                material_chars=d.chars,
            )
        )
    return out


def _messages(system: str | None, *turns: str) -> tuple[tuple[str, str], ...]:
    """System message (if any), then turns alternating user, assistant, ..., user."""
    roles = [("user", "assistant")[i % 2] for i in range(len(turns))]
    head = (("system", system),) if system else ()
    return head + tuple(zip(roles, turns, strict=True))


# ---------------------------------------------------------------- coding

_CODE_INTROS = (
    "Here's some code from `Lib/{module}`:",
    "I'm reading `{module}` from the CPython standard library. This is the part I mean:",
    "Code below (from {module}):",
    "We vendored this from the standard library's {module} into our project:",
    "Take a look at this code:",
    "I maintain a fork of `{module}`. Relevant section:",
)
_CODE_SYSTEMS = (
    None,
    "You are an experienced Python developer. Answer concisely and show code where it helps.",
    None,
    "You are a careful code reviewer. Prefer small, safe changes and explain trade-offs.",
    None,
    "You are a coding assistant. Put all code in fenced Markdown blocks.",
)
_LANGS = ("Rust", "Go", "TypeScript", "Java", "C#", "Kotlin")
_TEST_FOCUS = (
    "the normal case and empty input",
    "boundary values and invalid arguments",
    "large inputs and unusual types",
)
_CODE_ASKS = (
    "Add type hints to `{name}` and to any helper it calls that appears here. Keep the behaviour "
    "exactly the same and show only the new signatures.",
    "Explain what `{name}` does, step by step, for a new colleague who knows Python but has "
    "never looked at this module.",
    "Write pytest unit tests for `{name}`. Cover {focus}, and use parametrize where it helps.",
    "Port `{name}` to {lang}. Keep the structure and names where the language allows, and point "
    "out anything that doesn't translate directly.",
    "Can you spot bugs or edge cases that `{name}` handles badly? Give concrete inputs that "
    "would misbehave.",
    "What are the time and space complexity of `{name}`? A short justification is enough.",
    "Refactor `{name}` for readability without changing its behaviour: clearer names, smaller "
    "pieces, early returns. Show the final code.",
    "Write a Google-style docstring for `{name}` with Args, Returns and Raises sections.",
    "Review this as if it were a pull request. Comment on naming, error handling and anything "
    "surprising, most important first.",
    "I'd like debug logging in `{name}`. Show where you would add calls to the standard logging "
    "module and what each should log.",
    "Give me a short runnable example that uses `{name}` with a realistic input, and show the "
    "output I should expect.",
    "Suggest up to three performance improvements for `{name}`, ordered by expected impact, with "
    "one line of reasoning each.",
    "Where should `{name}` validate its arguments, and which exceptions should it raise? Show "
    "the changed code.",
    "Would `{name}` be safe to call from several threads at once? If not, what would you change?",
    "How would you stub out what `{name}` depends on in a unit test? Show a short example.",
    "Write a short README section for `{name}`: what it is for, a usage snippet and caveats.",
    "Our style guide bans one-letter names outside comprehensions. Rename the variables in "
    "`{name}` to follow it and show the result.",
    "Does `{name}` have side effects or hidden state? List them and suggest how to isolate them.",
)


def _coding() -> list[Conversation]:
    material = _material("code")
    anchors = _spread(material.starts["def"], PER_DOMAIN)
    headers = [
        (m.start(), m.group(1)) for m in re.finditer(r"^# =+ Lib/(\S+)", material.text, re.M)
    ]
    rng = random.Random(1)
    out = []
    for i, offset in enumerate(anchors):
        module = [name for start, name in headers if start < offset][-1]
        m = re.match(r"\s*(?:def|class) (\w+)", material.text[offset:])
        rounds = i // len(_CODE_ASKS)  # how often this ask came before: vary its parameters
        ask = _CODE_ASKS[i % len(_CODE_ASKS)].format(
            name=m.group(1) if m else "this code",
            lang=_LANGS[rounds % len(_LANGS)],
            focus=_TEST_FOCUS[rounds % len(_TEST_FOCUS)],
        )
        intro = _CODE_INTROS[(i + rounds) % len(_CODE_INTROS)].format(module=module)
        user = f"{intro}\n\n```python\n{_S}\n```\n\n{ask}"
        system = _CODE_SYSTEMS[(i // 2) % len(_CODE_SYSTEMS)]
        out.append(
            Conversation(
                messages=_messages(system, user),
                source="coding",
                max_tokens=MAX_TOKENS["coding"],
                material_corpus="code",
                material_offset=offset,
                material_chars=rng.randrange(1100, 1601, 50),
            )
        )
    return out


# ---------------------------------------------------------------- math

_NAMES = (
    "Maya", "Leo", "Aisha", "Tom", "Priya", "Carlos", "Nora", "Sam", "Yusuf", "Elena", "Kofi",
    "Grace", "Ben", "Lin", "Omar", "Chloe", "Jamal", "Ruth", "Ivan", "Zoe",
)  # fmt: skip


def _money(x: float) -> str:
    return f"${x:,.2f}" if x != int(x) else f"${int(x):,}"


def _p_bakery(r: random.Random, n: str) -> str:
    trays, per = r.randint(3, 8), r.choice((6, 8, 12))
    a, b = r.randint(5, trays * per // 3), r.randint(5, trays * per // 3)
    return (
        f"{n} bakes {trays} trays of muffins for the school fair, with {per} muffins on each tray. "
        f"{a} are sold in the morning and {b} in the afternoon, and 4 go to the volunteers. How "
        "many muffins are left at the end of the day?"
    )


def _p_savings(r: random.Random, n: str) -> str:
    price, have, weekly = r.randrange(180, 600, 10), r.randrange(20, 120, 5), r.choice((15, 20, 25))
    return (
        f"{n} is saving for a bike that costs ${price}. So far {n} has ${have}, and adds "
        f"${weekly} every week from a paper round. How many weeks will it take until the bike is "
        "affordable?"
    )


def _p_train(r: random.Random, n: str) -> str:
    h, v, t, s, v2 = r.randint(6, 11), r.choice((80, 90, 120)), 2, r.choice((15, 20, 30)), 60
    return (
        f"{n} takes a train that leaves at {h}:00 and travels at {v} km/h for {t} hours. It then "
        f"stops for {s} minutes and continues at {v2} km/h for one more hour. How far does "
        f"{n} travel in total, and at what time does the train arrive?"
    )


def _p_fence(r: random.Random, n: str) -> str:
    length, width, cost = r.randint(6, 20), r.randint(3, 10), r.choice((12, 15, 18, 22))
    return (
        f"{n}'s vegetable garden is a rectangle {length} metres long and {width} metres wide. "
        f"Fencing costs ${cost} per metre, and a 1-metre gate on one side needs no fencing. What "
        "does the fencing cost, and what is the area of the garden?"
    )


def _p_reading(r: random.Random, n: str) -> str:
    pages, first, daily = r.randrange(240, 480, 8), r.randint(20, 40), r.choice((25, 30, 35, 40))
    return (
        f"{n} starts a {pages}-page novel on Monday and reads {first} pages that day, then twice "
        f"as many on Tuesday. From Wednesday on, {n} reads {daily} pages a day. On which day of "
        "the week is the book finished?"
    )


def _p_discount(r: random.Random, n: str) -> str:
    price, off, tax = r.randrange(40, 200, 5), r.choice((15, 20, 25, 30)), r.choice((5, 8, 10))
    return (
        f"A jacket costs ${price}. In the sale it is {off}% off, and {tax}% sales tax is added to "
        f"the reduced price at the till. How much does {n} pay for the jacket?"
    )


def _p_recipe(r: random.Random, n: str) -> str:
    serves, flour, eggs, people = (
        4,
        r.choice((1.5, 2, 2.5)),
        r.choice((2, 3)),
        r.choice((6, 10, 14)),
    )
    return (
        f"A pancake recipe for {serves} people uses {flour:g} cups of flour, {eggs} eggs and 1.5 "
        f"cups of milk. {n} is making pancakes for {people} people. How much of each ingredient "
        "is needed? Round the eggs up to a whole number."
    )


def _p_ages(r: random.Random, n: str) -> str:
    gap, years, younger = r.randint(2, 9), r.randint(3, 10), r.randint(4, 20)
    total = 2 * (younger + years) + gap
    return (
        f"{n} is {gap} years older than a cousin, Alex. In {years} years, the sum of their ages "
        f"will be {total}. How old is each of them now?"
    )


def _p_fuel(r: random.Random, n: str) -> str:
    use, km, price = r.choice((5.5, 6, 6.5, 7.2)), r.randrange(120, 480, 10), r.choice((1.6, 1.75))
    return (
        f"{n}'s car uses {use:g} litres of fuel per 100 km. The drive to visit family is {km} km "
        f"each way, and fuel costs ${price:.2f} per litre. How much does the fuel for the round "
        "trip cost?"
    )


def _p_overtime(r: random.Random, n: str) -> str:
    rate, hours = r.choice((16, 18, 21, 24)), r.randint(43, 52)
    return (
        f"{n} earns ${rate} an hour and is paid time and a half for every hour over 40 in a week. "
        f"Last week {n} worked {hours} hours. What were the week's earnings before tax?"
    )


def _p_buses(r: random.Random, n: str) -> str:
    pupils, teachers, seats = r.randint(110, 260), r.randint(6, 14), r.choice((40, 48, 52))
    return (
        f"{pupils} pupils and {teachers} teachers are going on a school trip organised by {n}. "
        f"Each coach has {seats} seats. How many coaches are needed, and how many seats will be "
        "empty?"
    )


def _p_paint(r: random.Random, n: str) -> str:
    length, height, window, cover = r.choice((3, 4, 5)), r.choice((2.4, 2.5, 2.7)), 2, 10
    return (
        f"{n} is painting a square room whose walls are each {length} m long and {height:g} m "
        f"high. One wall has a window of {window} square metres. Every wall needs two coats, and "
        f"a tin covers {cover} square metres. How many tins are needed?"
    )


def _p_change(r: random.Random, n: str) -> str:
    apples, pears, a, p = r.choice((2.2, 2.5, 3)), r.choice((2.8, 3.4)), r.randint(2, 4), 2
    return (
        f"At the market, apples cost ${apples:.2f} per kilo and pears ${pears:.2f} per kilo. "
        f"{n} buys {a} kilos of apples and {p} kilos of pears and pays with a $20 note. How much "
        f"change should {n} get?"
    )


def _p_tank(r: random.Random, n: str) -> str:
    litres, fill, leak = r.randrange(600, 2000, 100), r.choice((25, 30, 40)), r.choice((5, 10))
    return (
        f"A rain tank in {n}'s garden holds {litres} litres. A hose fills it at {fill} litres per "
        f"minute, but a crack lets {leak} litres per minute leak out. Starting from empty, how "
        "long does it take to fill the tank, in hours and minutes?"
    )


def _p_class(r: random.Random, n: str) -> str:
    pupils, girls, walk_b = 40, r.choice((40, 60)), r.choice((25, 75))
    return (
        f"In {n}'s class of {pupils} pupils, {girls}% are girls. Half of the girls and {walk_b}% "
        "of the boys walk to school. How many pupils in the class walk to school?"
    )


def _p_running(r: random.Random, n: str) -> str:
    start, add, weeks = r.randint(8, 15), r.choice((2, 3)), r.randint(6, 12)
    return (
        f"{n} is training for a half marathon: {start} km in the first week, and {add} km more "
        f"every week after that. How many kilometres will {n} have run in total after {weeks} "
        "weeks?"
    )


def _p_pizza(r: random.Random, n: str) -> str:
    friends, pizzas, slices = r.randint(5, 9), r.randint(3, 6), r.choice((8, 10))
    return (
        f"{n} and {friends - 1} friends order {pizzas} pizzas, each cut into {slices} slices. If "
        "they share the slices equally, how many slices does each person get, and how many are "
        "left over?"
    )


def _p_interest(r: random.Random, n: str) -> str:
    amount, rate, years = r.randrange(1000, 8000, 500), r.choice((2, 3, 4.5)), r.randint(3, 7)
    return (
        f"{n} puts ${amount:,} into a savings account that pays {rate:g}% simple interest per "
        f"year. How much is in the account after {years} years, and how much of it is interest?"
    )


def _p_tickets(r: random.Random, n: str) -> str:
    adults, children, pa, pc, fee = r.randint(80, 200), r.randint(20, 90), 18, 9, r.choice((10, 15))
    return (
        f"{n}'s theatre group sold {adults} adult tickets at ${pa} and {children} child tickets at "
        f"${pc}. The venue keeps {fee}% of the takings. How much money does the group keep?"
    )


def _p_commute(r: random.Random, n: str) -> str:
    start, walk, ride, walk2 = r.choice(("8:30", "9:00", "8:45")), r.randint(8, 15), 27, 6
    return (
        f"{n} starts work at {start}. The walk to the station takes {walk} minutes, the train "
        f"{ride} minutes, and the walk from the train to the office {walk2} minutes. Trains leave "
        "every 15 minutes, on the hour and at quarter past, half past and quarter to. What is the "
        f"latest time {n} can leave home and still be on time?"
    )


def _p_plans(r: random.Random, n: str) -> str:
    a, per_gb, b = r.choice((8, 10, 12)), r.choice((2, 2.5, 3)), r.choice((25, 30, 35))
    return (
        f"{n} is choosing a phone plan. Plan A costs ${a} a month plus {_money(per_gb)} per GB of "
        f"data. Plan B costs ${b} a month with unlimited data. Above how many GB a month is plan "
        "B the cheaper one?"
    )


def _p_library(r: random.Random, n: str) -> str:
    books, out, back, new, bad = (
        r.randint(2000, 5000),
        r.randint(100, 300),
        r.randint(50, 250),
        r.randint(20, 80),
        r.randint(5, 30),
    )
    return (
        f"The school library that {n} runs had {books:,} books on Monday. During the week it lent "
        f"out {out}, got {back} back, bought {new} new ones and threw away {bad} damaged ones. How "
        "many books are on the shelves on Friday?"
    )


def _p_cycling(r: random.Random, n: str) -> str:
    km, v1, v2 = r.choice((12, 18, 24, 30)), r.choice((18, 20, 24)), r.choice((12, 15))
    return (
        f"{n} cycles {km} km to the lake at {v1} km/h and comes back the same way, uphill, at "
        f"{v2} km/h. What is the average speed for the whole trip? (It is not the average of the "
        "two speeds.)"
    )


def _p_stickers(r: random.Random, n: str) -> str:
    r1, r2 = r.choice(((3, 2), (5, 3), (4, 1)))
    total = (r1 + r2) * r.randint(6, 12)
    return (
        f"{n} and a cousin share {total} stickers in the ratio {r1}:{r2}, {n} getting the larger "
        f"share. {n} then gives 5 stickers to the cousin. How many stickers does each of them "
        "have now?"
    )


def _p_crates(r: random.Random, n: str) -> str:
    box, crate, biscuits = r.choice((12, 16, 24)), r.choice((8, 10)), r.randint(3000, 9000)
    return (
        f"{n}'s bakery packs biscuits in boxes of {box}, and {crate} boxes fit in a crate. From a "
        f"batch of {biscuits:,} biscuits, how many full crates can be packed, and how many "
        "biscuits are left over once every possible full box is packed?"
    )


_PROBLEMS: tuple[Callable[[random.Random, str], str], ...] = (
    _p_bakery, _p_savings, _p_train, _p_fence, _p_reading, _p_discount, _p_recipe, _p_ages,
    _p_fuel, _p_overtime, _p_buses, _p_paint, _p_change, _p_tank, _p_class, _p_running,
    _p_pizza, _p_interest, _p_tickets, _p_commute, _p_plans, _p_library, _p_cycling, _p_stickers,
    _p_crates,
)  # fmt: skip
_MATH_FRAMES = (
    (None, "Here are some worked examples from my textbook:\n\n" + _S + "\n\nUsing the same "
     "careful style, solve this one:\n{problem}"),
    ("You are a patient maths tutor. Work step by step and end with 'Answer: <result>'.",
     "Practice set with solutions:\n\n" + _S + "\n\nNow a word problem. {problem}"),
    (None, "My son's homework sheet starts with these solved examples:\n\n" + _S + "\n\nHe's "
     "stuck on this one. Can you walk through it so that he can follow?\n{problem}"),
    (None, "Reference solutions:\n" + _S + "\n\nProblem: {problem}\nThink step by step, then give "
     "the final answer on its own line starting with '####'."),
    ("Solve grade-school maths problems. Show each calculation on its own line.",
     "Examples:\n\n" + _S + "\n\n{problem}"),
    (None, "I'm checking my own answers against these:\n\n" + _S + "\n\nCould you solve this one "
     "step by step so I can compare?\n{problem}"),
)  # fmt: skip


def _math() -> list[Conversation]:
    rng = random.Random(2)
    drafts = []
    for i in range(PER_DOMAIN):
        problem = _PROBLEMS[i % len(_PROBLEMS)](rng, _NAMES[i % len(_NAMES)])
        system, user = _MATH_FRAMES[(i + i // len(_PROBLEMS)) % len(_MATH_FRAMES)]
        drafts.append(
            _Draft(
                _messages(system, user.replace("{problem}", problem)),
                "problem",
                rng.randrange(500, 1201, 50),
            )
        )
    return _finish("math", "math", drafts)


# ---------------------------------------------------------------- document

_DOC_INTROS = (
    "This is from the Python Language Reference, topic `{topic}`:",
    "I'm studying for a Python interview. Here is the reference text on `{topic}`:",
    "Please read this documentation excerpt ({topic}):",
    "Document:",
    "Below is a passage from the official Python docs about {topic}.",
    "Our team wiki quotes the language reference on `{topic}`:",
)
_DOC_SYSTEMS = (
    None,
    "You answer questions about documents. Use only the document, and say so when it does not "
    "contain the answer.",
    None,
    "You are a technical writer who explains things clearly and briefly.",
)
_HUMAN_LANGS = ("French", "Spanish", "German", "Italian", "Portuguese", "Dutch")
_PRIOR_LANGS = ("JavaScript", "Java", "C", "Go", "Ruby", "C++")
_DOC_ASKS = (
    "Summarise the passage above in {k} bullet points for someone who is new to Python.",
    "What is the most important rule this passage states? Quote the sentence that supports "
    "your answer.",
    "Write three quiz questions, with answers, that can be answered from this text alone.",
    "Explain this in plain English in at most {k} sentences, avoiding jargon where you can.",
    "List the technical terms the text uses, each with a one-line definition based on the text.",
    "Give a two-sentence TL;DR, then the details a code reviewer should keep in mind.",
    "Turn this into a short FAQ: four questions a beginner might ask, each answered from the text.",
    "Does the passage include an example? If so, turn it into a small runnable program with "
    "comments; if not, write one that shows the main point.",
    "I'm preparing a lightning talk. Draft three slide titles with one sentence of speaker notes "
    "each, based on this text.",
    "Which parts of this would surprise someone coming from {prior}? Explain briefly.",
    "Translate the first paragraph into {lang}, keeping technical terms and code in English.",
    "Are there grammar rules (lines with '::=') in the text? If so, explain each in words; if "
    "not, say which rules the prose describes.",
    "What questions does this passage leave unanswered? List up to four.",
    "Rewrite the passage as concise reference notes with short headings and bullets, in no more "
    "than 150 words.",
    "Based only on this text, what mistakes might a programmer make? Give two, each with a short "
    "code illustration.",
    "Is the passage mainly about syntax, semantics or implementation details? Justify your "
    "answer in two or three sentences.",
    "Write a one-paragraph summary for a study guide, in the third person.",
)


def _document() -> list[Conversation]:
    material = _material("document")
    anchors = _spread(material.starts["paragraph"], PER_DOMAIN)
    topics = [
        (m.start(), m.group(1)) for m in re.finditer(r"^==== (\S+) ====", material.text, re.M)
    ]
    rng = random.Random(3)
    out = []
    for i, offset in enumerate(anchors):
        topic = [name for start, name in topics if start < offset][-1]
        rounds = i // len(_DOC_ASKS)
        ask = _DOC_ASKS[i % len(_DOC_ASKS)].format(
            k=3 + rounds % 3,
            prior=_PRIOR_LANGS[rounds % len(_PRIOR_LANGS)],
            lang=_HUMAN_LANGS[rounds % len(_HUMAN_LANGS)],
        )
        intro = _DOC_INTROS[(i + rounds) % len(_DOC_INTROS)].format(topic=topic)
        system = _DOC_SYSTEMS[(i // 3) % len(_DOC_SYSTEMS)]
        out.append(
            Conversation(
                messages=_messages(system, f"{intro}\n\n{_S}\n\n{ask}"),
                source="document",
                max_tokens=MAX_TOKENS["document"],
                material_corpus="document",
                material_offset=offset,
                material_chars=rng.randrange(800, 1501, 50),
            )
        )
    return out


# ---------------------------------------------------------------- multiturn


@dataclass(frozen=True)
class _Scenario:
    kind: str  # the chat-corpus record kind the material starts with
    system: str | None
    turns: tuple[str, ...]  # user, assistant, user, assistant, user
    variants: tuple[str, ...]  # "{x}" in the turns, or "{x}|{y}"


_SCENARIOS = (
    _Scenario(
        "meeting",
        None,
        (
            "Here are my notes from this week:\n\n" + _S + "\n\nI have to turn them into an "
            "update for my manager. Any tips first?",
            "Lead with outcomes rather than activity: what moved, what's blocked and what you "
            "need. Keep it easy to scan.",
            "She reads these on her phone, so shorter is better. Do blockers go first?",
            "Put them right after the headline results, each with the help you need and by when.",
            "Great. Please draft the update from my notes in under {x} words.",
        ),
        ("120", "150", "200"),
    ),
    _Scenario(
        "meeting",
        None,
        (
            "Notes from today's sync:\n\n" + _S + "\n\nCan you help me sort out the follow-ups?",
            "Sure. Would you like them grouped by person or by deadline?",
            "By person, please. And flag anything that has no owner.",
            "Will do. Should I include ideas that were discussed but not agreed?",
            "No, only agreed items. Please list them{x}.",
        ),
        (" as a Markdown table", " as a checklist", ", one line each"),
    ),
    _Scenario(
        "meeting",
        None,
        (
            "I took these notes at the meeting {x} missed:\n\n" + _S + "\n\nShe's back tomorrow.",
            "Would you like a full recap for her, or only what affects her work?",
            "Only what affects her work, plus anything she needs to decide.",
            "Got it. Should the tone be friendly or formal?",
            "Friendly but professional. Please write the email to {x}.",
        ),
        ("Rosa", "Ingrid", "Beatriz"),  # names the chat corpus never uses
    ),
    _Scenario(
        "meeting",
        None,
        (
            "Sharing the notes from our planning meeting:\n\n" + _S + "\n\nI'm presenting risks "
            "to the steering group on {x}.",
            "Happy to help. Do you want risks only, or issues as well?",
            "What's the difference?",
            "A risk might happen and can still be prevented; an issue has already happened and "
            "needs handling.",
            "Makes sense. Give me the top three risks from the notes, each with a mitigation.",
        ),
        ("Monday", "Thursday", "Friday"),
    ),
    _Scenario(
        "meeting",
        None,
        (
            "Last week's meeting notes:\n\n" + _S + "\n\nI'm chairing the next one.",
            "Nice. Is the next meeting the same format, or do you want to change it?",
            "Same format, but it ran over last time, so I want strict time boxes.",
            "Then keep to open points that need the group, and move status updates to writing.",
            "Good idea. Draft the agenda from the open points; we have {x} minutes.",
        ),
        ("30", "45", "60"),
    ),
    _Scenario(
        "meeting",
        None,
        (
            "{x} These are the notes:\n\n" + _S + "\n\nCan you help me tell the wider team?",
            "Of course. Where will the announcement go: email, a chat channel, or both?",
            "Our team chat channel. People skim it, so short is better.",
            "Then one line per decision, with a link or name for questions, works well.",
            "Perfect. Write the post announcing the decisions, with few or no emoji.",
        ),
        (
            "We had our sync this morning.",
            "Big meeting today, lots decided.",
            "Quick one after today's meeting.",
        ),
    ),
    _Scenario(
        "meeting",
        "You are an assistant for a product team. The user's meeting notes:\n\n"
        + _S
        + "\n\nAnswer from the notes and say when they don't cover something.",
        (
            "I just joined the team as {x}. How should I read these notes?",
            "Skim the decisions and action items first: they tell you what's settled and who's "
            "doing what. The bullets give the background.",
            "Good tip. Who should I ask about things that aren't in there?",
            "Your team lead, or whoever owns the related action item.",
            "OK. Based on the notes, what are the three things I should understand first?",
        ),
        ("a designer", "a backend engineer", "a product manager"),
    ),
    _Scenario(
        "meeting",
        None,
        (
            "Meeting notes below:\n\n" + _S + "\n\nOur colleagues in {x} couldn't join.",
            "Would a summary in {y} help them catch up?",
            "Yes, most of them prefer {y}, though everyone reads some English.",
            "Then keep it short and leave project names in English so they match your tools.",
            "Please summarise the decisions in {y} for the {x} office, five bullets at most.",
        ),
        ("Lyon|French", "Milan|Italian", "Lisbon|Portuguese"),
    ),
    _Scenario(
        "incident",
        None,
        (
            "This is the log from our incident channel:\n\n" + _S + "\n\nI'm writing the "
            "postmortem.",
            "Good to do it while it's fresh. Do you follow a template?",
            "We use a blameless format: summary, timeline, impact and follow-ups.",
            "Then the timeline should list times and facts only, without opinions.",
            "Exactly. Please build the timeline from the log, one line per event{x}.",
        ),
        ("", ", newest last", ", with names"),
    ),
    _Scenario(
        "chatlog",
        None,
        (
            "I was away for {x} days and this is what I missed in the team channel:\n\n"
            + _S
            + "\n\nToo long to read.",
            "I can summarise it. What do you care about most?",
            "Anything that needs an action from me, and any decisions.",
            "Understood. Should I skip the small talk?",
            "Yes please. Give me the summary.",
        ),
        ("three", "five", "ten"),
    ),
    _Scenario(
        "chatlog",
        "You are a helpful bot in a team chat. Recent messages in the channel:\n\n"
        + _S
        + "\n\nOnly state what the messages say.",
        (
            "hey bot, are you able to see the channel history?",
            "Yes, I can see the recent messages you shared with me.",
            "cool. can you track promises people make?",
            "I can list who said they'd do what, as long as it's in the messages.",
            "great, list who promised to do what{x}",
        ),
        ("", ", with the times", ", grouped by person"),
    ),
    _Scenario(
        "chatlog",
        None,
        (
            "Can you help me reply in this thread?\n\n" + _S + "\n\nI'm {x}, the last message "
            "is what I need to answer.",
            "Sure. Do you agree with what was proposed, or do you want to push back?",
            "Mostly agree, but I want to flag the timing.",
            "Then agree first, raise the timing concern in one sentence and suggest a next step.",
            "Sounds right. Write my reply, casual tone, two or three sentences.",
        ),
        ("the team lead", "new here", "from the QA side"),
    ),
    _Scenario(
        "support",
        None,
        (
            "Here's a support conversation I'm taking over from a colleague:\n\n"
            + _S
            + "\n\nThe customer is still waiting.",
            "Let's get them an answer quickly. What does your policy allow here?",
            "Refunds within {x} days are fine; after that we offer account credit.",
            "Good. Should the reply apologise for the wait?",
            "Yes, briefly. Please draft my next message to the customer.",
        ),
        ("14", "30", "60"),
    ),
    _Scenario(
        "support",
        "You help a support team triage tickets. Categories: billing, account, delivery, bug, "
        "other. Priorities: low, normal, urgent.",
        (
            "New ticket thread:\n\n" + _S + "\n\nCan you triage this?",
            "Sure. Should the customer's plan affect the priority?",
            "Yes: {x} customers go one level higher.",
            "Noted. Do you also want a suggested owner team?",
            "Yes. Give the category, priority, owner team and one sentence of reasoning.",
        ),
        ("Business", "Enterprise", "Team plan"),
    ),
    _Scenario(
        "support",
        None,
        (
            "My shift ends in {x} minutes and this ticket is still open:\n\n" + _S + "\n\nI need "
            "to hand it over.",
            "A good handover says what the problem is, what was tried and what's pending.",
            "Yes, and the next shift hates long notes.",
            "Then aim for five lines or fewer, with the next step first.",
            "Please write the handover note for this ticket.",
        ),
        ("ten", "fifteen", "twenty"),
    ),
    _Scenario(
        "support",
        None,
        (
            "We keep getting tickets like this one:\n\n" + _S + "\n\nI'd like a help article.",
            "Good idea. Who reads your help centre: end users or admins?",
            "{x}.",
            "Then use plain words, short steps and say what to do if it doesn't work.",
            "Write the article from this ticket: a title, the problem, and the steps to fix it.",
        ),
        ("Mostly end users", "Mostly admins", "Both, but mostly small-business owners"),
    ),
)


def _multiturn() -> list[Conversation]:
    rng = random.Random(4)
    drafts = []
    for i in range(PER_DOMAIN):
        s = _SCENARIOS[i % len(_SCENARIOS)]
        x, _, y = s.variants[(i // len(_SCENARIOS)) % len(s.variants)].partition("|")
        turns = tuple(t.replace("{x}", x).replace("{y}", y) for t in s.turns)
        drafts.append(_Draft(_messages(s.system, *turns), s.kind, rng.randrange(700, 1301, 50)))
    return _finish("multiturn", "chat", drafts)


# ---------------------------------------------------------------- json

_JSON_ONLY = (
    "Output only the JSON.",
    "Reply with valid JSON and nothing else.",
    "No explanation, just JSON.",
    "Don't wrap it in code fences or add any text around it.",
)
_JSON_SYSTEMS = (
    None,
    "You convert text into strict JSON. Never add commentary.",
    None,
    "You are a data-entry assistant. Use null for anything the text does not give.",
)
_JSON_TASKS: tuple[tuple[str, str, str], ...] = (  # record kind, intro, instruction
    ("products", "Here are some product listings from our shop export:",
     "Convert every product above into a JSON array of objects with \"name\", \"sku\", "
     "\"price\" (number), \"rating\" (number or null) and \"in_stock\" (integer, 0 if out)."),
    ("products", "Product feed:",
     "Give me a JSON object that maps each SKU to its price in cents (an integer)."),
    ("products", "Catalogue text pasted from the website:",
     "Return JSON with two keys, \"cheapest\" and \"best_rated\", each an object with "
     "\"name\" and \"price\", chosen from the products listed."),
    ("logs", "Log excerpt from our services:",
     "Parse each log line into a JSON object with \"timestamp\", \"level\", \"service\", "
     "\"latency_ms\" (number or null) and \"message\". Return a JSON array."),
    ("logs", "These lines are from last night's logs:",
     "Return a JSON object {\"errors\": [...], \"warn_count\": n}, where each error is "
     "{\"timestamp\", \"service\", \"message\"} for an ERROR line."),
    ("logs", "Raw logs:",
     "Group the lines by service: a JSON object keyed by service name whose values are "
     "{\"count\", \"max_latency_ms\"}."),
    ("contacts", "Email signatures collected from our inbox:",
     "Extract each person into a JSON array with \"full_name\", \"title\", \"company\", "
     "\"email\", \"phone\" and \"city\". Use null for missing fields."),
    ("contacts", "Contact details I copied from emails:",
     "Build a JSON address book keyed by email address; each value is {\"name\", \"company\"}. "
     "Skip people without an email."),
    ("orders", "Order confirmations from the shop mailbox:",
     "Turn each order into JSON: {\"order_id\", \"date\" (YYYY-MM-DD), \"customer\", \"items\": "
     "[{\"product\", \"quantity\", \"unit_price\"}], \"total\", \"currency\"}. Return an array."),
    ("orders", "Recent orders:",
     "List every line item across all orders as a JSON array of {\"order_id\", \"product\", "
     "\"quantity\"}."),
    ("orders", "Here is the order export:",
     "Return a JSON object mapping each currency to the sum of order totals in that currency."),
    ("events", "Event listings from the city newsletter:",
     "Convert the listings to a JSON array for our calendar app with \"title\", \"date\" "
     "(YYYY-MM-DD, the year is 2025), \"start\", \"end\", \"venue\", \"city\" and \"price\" "
     "(0 if free)."),
    ("events", "What's on this month:",
     "Which events are free? Answer with a JSON array of {\"title\", \"date\", \"city\"}."),
    ("jobs", "Job adverts from the board:",
     "Extract the adverts as JSON objects with \"title\", \"company\", \"location\", "
     "\"remote_policy\", \"salary_min\", \"salary_max\", \"currency\" and \"deadline\"."),
    ("jobs", "Openings we're tracking:",
     "Return a JSON array of the fully remote roles only, each {\"title\", \"company\", "
     "\"salary_max\"}; an empty array if there are none."),
    ("statements", "Lines from my bank statement:",
     "Convert each line to JSON with \"date\" (YYYY-MM-DD), \"type\", \"merchant\", "
     "\"amount\" (negative for money out) and \"balance\". Return an array."),
    ("statements", "My transactions:",
     "Put each transaction in one category (groceries, transport, bills, eating out, income, "
     "other) and return a JSON array of {\"merchant\", \"amount\", \"category\"}."),
    ("statements", "Statement extract:",
     "Return a JSON summary: {\"total_out\", \"total_in\", \"largest_payment\": {\"merchant\", "
     "\"amount\"}}, with amounts as numbers."),
)  # fmt: skip


def _json() -> list[Conversation]:
    rng = random.Random(5)
    drafts = []
    for i in range(PER_DOMAIN):
        kind, intro, task = _JSON_TASKS[i % len(_JSON_TASKS)]
        rounds = i // len(_JSON_TASKS)
        only = _JSON_ONLY[(i + rounds) % len(_JSON_ONLY)]
        system = _JSON_SYSTEMS[(i + rounds) % len(_JSON_SYSTEMS)]
        user = f"{intro}\n\n{_S}\n\n{task} {only}"
        drafts.append(_Draft(_messages(system, user), kind, rng.randrange(400, 1001, 50)))
    return _finish("json", "json", drafts)


# ---------------------------------------------------------------- all of them


@functools.cache
def _all() -> tuple[Conversation, ...]:
    by_domain = {
        "coding": _coding(),
        "math": _math(),
        "document": _document(),
        "multiturn": _multiturn(),
        "json": _json(),
    }
    return tuple(c for group in zip(*(by_domain[d] for d in DOMAINS), strict=True) for c in group)


def conversations() -> list[Conversation]:
    """Every built-in conversation, interleaved by domain (coding, math, document, multiturn,
    json, coding, ...), always the same."""
    return list(_all())
