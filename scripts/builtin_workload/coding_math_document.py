"""The `coding`, `math` and `document` conversations."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from drafts import (
    MAX_TOKENS,
    PER_DOMAIN,
    SLOT,
    Draft,
    finish,
    material_of,
    messages_of,
    spread,
)

from bench.conversation import Conversation

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


def coding() -> list[Conversation]:
    material = material_of("code")
    anchors = spread(material.starts["def"], PER_DOMAIN)
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
        user = f"{intro}\n\n```python\n{SLOT}\n```\n\n{ask}"
        system = _CODE_SYSTEMS[(i // 2) % len(_CODE_SYSTEMS)]
        out.append(
            Conversation(
                messages=messages_of(system, user),
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
    (None, "Here are some worked examples from my textbook:\n\n" + SLOT + "\n\nUsing the same "
     "careful style, solve this one:\n{problem}"),
    ("You are a patient maths tutor. Work step by step and end with 'Answer: <result>'.",
     "Practice set with solutions:\n\n" + SLOT + "\n\nNow a word problem. {problem}"),
    (None, "My son's homework sheet starts with these solved examples:\n\n" + SLOT + "\n\nHe's "
     "stuck on this one. Can you walk through it so that he can follow?\n{problem}"),
    (None, "Reference solutions:\n" + SLOT + "\n\nProblem: {problem}\nThink step by step, then "
     "give the final answer on its own line starting with '####'."),
    ("Solve grade-school maths problems. Show each calculation on its own line.",
     "Examples:\n\n" + SLOT + "\n\n{problem}"),
    (None, "I'm checking my own answers against these:\n\n" + SLOT + "\n\nCould you solve this one "
     "step by step so I can compare?\n{problem}"),
)  # fmt: skip


def math() -> list[Conversation]:
    rng = random.Random(2)
    drafts = []
    for i in range(PER_DOMAIN):
        problem = _PROBLEMS[i % len(_PROBLEMS)](rng, _NAMES[i % len(_NAMES)])
        system, user = _MATH_FRAMES[(i + i // len(_PROBLEMS)) % len(_MATH_FRAMES)]
        drafts.append(
            Draft(
                messages_of(system, user.replace("{problem}", problem)),
                "problem",
                rng.randrange(500, 1201, 50),
            )
        )
    return finish("math", "math", drafts)


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


def document() -> list[Conversation]:
    material = material_of("document")
    anchors = spread(material.starts["paragraph"], PER_DOMAIN)
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
                messages=messages_of(system, f"{intro}\n\n{SLOT}\n\n{ask}"),
                source="document",
                max_tokens=MAX_TOKENS["document"],
                material_corpus="document",
                material_offset=offset,
                material_chars=rng.randrange(800, 1501, 50),
            )
        )
    return out
