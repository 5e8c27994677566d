"""The `multiturn` and `json` conversations."""

from __future__ import annotations

import random
from dataclasses import dataclass

from drafts import PER_DOMAIN, SLOT, Draft, finish, messages_of

from bench.conversation import Conversation

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
            "Here are my notes from this week:\n\n" + SLOT + "\n\nI have to turn them into an "
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
            "Notes from today's sync:\n\n" + SLOT + "\n\nCan you help me sort out the follow-ups?",
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
            "I took these notes at the meeting {x} missed:\n\n" + SLOT + "\n\nShe's back tomorrow.",
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
            "Sharing the notes from our planning meeting:\n\n" + SLOT + "\n\nI'm presenting risks "
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
            "Last week's meeting notes:\n\n" + SLOT + "\n\nI'm chairing the next one.",
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
            "{x} These are the notes:\n\n" + SLOT + "\n\nCan you help me tell the wider team?",
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
        + SLOT
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
            "Meeting notes below:\n\n" + SLOT + "\n\nOur colleagues in {x} couldn't join.",
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
            "This is the log from our incident channel:\n\n" + SLOT + "\n\nI'm writing the "
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
            + SLOT
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
        + SLOT
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
            "Can you help me reply in this thread?\n\n" + SLOT + "\n\nI'm {x}, the last message "
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
            + SLOT
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
            "New ticket thread:\n\n" + SLOT + "\n\nCan you triage this?",
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
            "My shift ends in {x} minutes and this ticket is still open:\n\n" + SLOT + "\n\nI need "
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
            "We keep getting tickets like this one:\n\n" + SLOT + "\n\nI'd like a help article.",
            "Good idea. Who reads your help centre: end users or admins?",
            "{x}.",
            "Then use plain words, short steps and say what to do if it doesn't work.",
            "Write the article from this ticket: a title, the problem, and the steps to fix it.",
        ),
        ("Mostly end users", "Mostly admins", "Both, but mostly small-business owners"),
    ),
)


def multiturn() -> list[Conversation]:
    rng = random.Random(4)
    drafts = []
    for i in range(PER_DOMAIN):
        s = _SCENARIOS[i % len(_SCENARIOS)]
        x, _, y = s.variants[(i // len(_SCENARIOS)) % len(s.variants)].partition("|")
        turns = tuple(t.replace("{x}", x).replace("{y}", y) for t in s.turns)
        drafts.append(Draft(messages_of(s.system, *turns), s.kind, rng.randrange(700, 1301, 50)))
    return finish("multiturn", "chat", drafts)


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


def json_requests() -> list[Conversation]:
    rng = random.Random(5)
    drafts = []
    for i in range(PER_DOMAIN):
        kind, intro, task = _JSON_TASKS[i % len(_JSON_TASKS)]
        rounds = i // len(_JSON_TASKS)
        only = _JSON_ONLY[(i + rounds) % len(_JSON_ONLY)]
        system = _JSON_SYSTEMS[(i + rounds) % len(_JSON_SYSTEMS)]
        user = f"{intro}\n\n{SLOT}\n\n{task} {only}"
        drafts.append(Draft(messages_of(system, user), kind, rng.randrange(400, 1001, 50)))
    return finish("json", "json", drafts)
