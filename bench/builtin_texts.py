"""Generated material for the built-in workload (bench/builtin_workload.py).

Two corpora the project writes itself, deterministically (fixed seeds, no locale, no clock):

- `chat`: what a user pastes into a multi-turn chat: meeting notes, team chat logs (the
  incident channel's logs also listed as kind `incident`) and customer-support conversations,
  one section per kind.
- `json`: semi-structured text to extract fields from: product listings, service log lines,
  email signatures, order confirmations, event listings, job adverts and bank statement
  lines, one section per kind.

Every name, company, address, phone number (fictional ranges) and email domain (`.example`)
is invented. Each corpus records where its records start, by kind, so a conversation can
start its material at the beginning of a record of the kind its question is about.
Standard library only: this runs on the GPU host.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Material:
    text: str
    starts: dict[str, tuple[int, ...]]  # record kind -> offsets where such a record starts


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_FIRST = (
    "Amara", "Jonas", "Priya", "Mateo", "Hannah", "Kenji", "Fatima", "Lucas", "Sofia", "Tomasz",
    "Aisha", "Daniel", "Mei", "Oliver", "Ines", "Ravi", "Elena", "Samuel", "Yuki", "Noah",
    "Chloe", "Emeka", "Lena", "Marco", "Zara", "Felix", "Nadia", "Owen", "Leila", "Hugo",
)  # fmt: skip
_LAST = (
    "Okafor", "Weber", "Sharma", "Garcia", "Lindqvist", "Tanaka", "Haddad", "Moreau", "Rossi",
    "Nowak", "Bello", "Cohen", "Chen", "Hughes", "Costa", "Iyer", "Petrova", "Mensah", "Sato",
    "Fischer", "Dubois", "Eze", "Vogel", "Bianchi", "Karimi", "Brandt", "Popescu", "Walsh",
)  # fmt: skip
_TEAMS = (
    "Platform", "Mobile", "Payments", "Growth", "Data", "Support", "Design", "Infrastructure",
    "Marketing", "Security", "Search", "Billing",
)  # fmt: skip
_PROJECTS = (
    "the checkout redesign", "the data warehouse migration", "the onboarding emails",
    "the Android 4.2 release", "the pricing page experiment", "the SOC 2 audit",
    "search relevance tuning", "the office move", "the customer portal", "the billing migration",
    "the new status page", "the iOS widget", "the partner API", "the accessibility review",
    "the recommendation service", "the spring campaign",
)  # fmt: skip
_SERVICES = (
    "payment-api", "auth-service", "search-indexer", "checkout-web", "notification-worker",
    "inventory-sync", "report-builder", "media-resizer",
)  # fmt: skip
_CITIES = (
    ("London", "GBP"), ("Leeds", "GBP"), ("Berlin", "EUR"), ("Rotterdam", "EUR"), ("Lyon", "EUR"),
    ("Milan", "EUR"), ("Dublin", "EUR"), ("Lisbon", "EUR"), ("Toronto", "CAD"),
    ("Austin", "USD"), ("Denver", "USD"), ("Melbourne", "AUD"),
)  # fmt: skip
_STREETS = (
    "Harbour Street", "Linden Avenue", "Mill Lane", "Queen's Road", "Canal Walk", "Station Road",
    "Orchard Close", "Market Square", "Rue des Tanneurs", "Via Garibaldi", "Kastanienallee",
    "Maple Drive",
)  # fmt: skip
_COMPANIES = (
    ("Lumen Biotech", "lumenbio"), ("Northwind Logistics", "northwind"),
    ("Harbourline Shipping", "harbourline"), ("Bluefern Analytics", "bluefern"),
    ("Copperleaf Studio", "copperleaf"), ("Tidewater Energy", "tidewater"),
    ("Kestrel Robotics", "kestrel"), ("Oakridge Dental", "oakridge"),
    ("Silverpine Software", "silverpine"), ("Meridian Foods", "meridianfoods"),
    ("Brightwell Insurance", "brightwell"), ("Fennel & Finch Architects", "fennelfinch"),
)  # fmt: skip


def _date(day: datetime.date, weekday: bool = True) -> str:
    text = f"{day.day} {_MONTHS[day.month - 1]} {day.year}"
    return f"{_WEEKDAYS[day.weekday()]} {text}" if weekday else text


def _workday(day: datetime.date) -> datetime.date:
    """`day`, or the Monday after it when it falls on a weekend."""
    return day + datetime.timedelta(days=max(0, 7 - day.weekday()) if day.weekday() > 4 else 0)


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _money(amount: float) -> str:
    return f"{amount:,.2f}"


# ---------------------------------------------------------------- chat: meeting notes

_STATUS = (
    "{p} is on track for the {date} milestone; what is left is mostly testing.",
    "{p} slipped by about a week because the vendor changed their API without notice.",
    "the first half of {p} is merged, the second half is waiting for review.",
    "load tests for {p} showed a p95 latency of {slow} ms, above the {m} ms target.",
    "there are {few} open bugs on {p}, {k} of them marked critical.",
    "pilot customers liked {p}; two of them asked for a CSV export.",
    "{p} needs a decision on whether we keep supporting the legacy file format.",
    "{k}0% of the budget for {p} is spent with roughly half of the scope done.",
    "design work for {p} is finished and has been handed over to engineering.",
    "{p} is blocked until we get access to the staging database.",
    "the contract for {p} is signed; kickoff with the agency is on {date}.",
    "usage of {p} grew {k}% week over week, mostly from the newsletter link.",
)
_DISCUSS = (
    "{a} proposed moving the deadline to {date}; {b} objected because of the marketing launch.",
    "{a} asked whether dark mode can be dropped from this release. Nobody objected.",
    "{a} raised the on-call load: {few} pages last week, most of them false alarms.",
    "{a} will pair with {b} on the migration script so that two people know it.",
    "{a} suggested a short written RFC before we commit to the new queue system.",
    "{a} and {b} disagree on hiring a contractor; {a} would rather wait until Q{q}.",
    "{b} reminded everyone that the support team needs two weeks' notice of UI changes.",
    "{a} wants the error budget policy written down before the next incident review.",
    "{b} showed the new dashboard; {a} asked for the numbers to be split by region.",
    "{a} thinks the estimate of {k} weeks is optimistic given the holidays.",
)
_DECISIONS = (
    "ship {p} behind a feature flag to 10% of users first.",
    "freeze new features on {p} until the critical bugs are fixed.",
    "move the retrospective to {wd}s from next week.",
    "{a} owns the vendor conversation from now on.",
    "keep the current deadline and cut scope instead.",
    "postpone {p} to next quarter and revisit in four weeks.",
    "hire one contractor for three months, budget approved by {b}.",
    "no decision yet; {a} will collect options for the next meeting.",
)
_ACTIONS = (
    "write the rollout plan for {p}",
    "book a meeting with legal about the data retention policy",
    "update the runbook for the payment alerts",
    "send the survey results to the design team",
    "file tickets for the {k} bugs found in testing",
    "find out why the cloud bill jumped last month",
    "draft the job description for the {role} role",
    "ask {b} for updated estimates on {p}",
    "share the slides from the customer workshop",
    "clean up the unused feature flags",
    "check the accessibility report for {p}",
    "set up the shared calendar for the on-call rotation",
)
_ROLES = ("backend engineer", "product designer", "data analyst", "SRE", "QA lead")


def _fill(
    rng: random.Random, template: str, day: datetime.date, names: Sequence[str], project: str
) -> str:
    a, b = rng.sample(list(names), 2)
    later = day + datetime.timedelta(days=rng.randint(7, 60))
    target = rng.choice((200, 250, 300, 400))
    return template.format(
        p=project,
        a=a,
        b=b,
        m=target,
        slow=target + rng.randint(20, 300),
        few=rng.randint(10, 45),
        k=rng.randint(2, 9),
        q=rng.randint(1, 4),
        date=_date(later, weekday=False),
        wd=rng.choice(_WEEKDAYS[:5]),
        role=rng.choice(_ROLES),
    )


def _meeting(rng: random.Random, day: datetime.date) -> str:
    day = _workday(day)
    team = rng.choice(_TEAMS)
    people = rng.sample(_FIRST, rng.randint(4, 6))
    absent = people.pop() if rng.random() < 0.4 else ""
    topics = rng.sample(_PROJECTS, 3)
    discussion = rng.sample(_DISCUSS, 6)
    decisions = rng.sample(_DECISIONS, 3)
    lines = [
        f"## Meeting notes: {team} weekly sync, {_date(day)}",
        "Attendees: " + ", ".join(people) + (f" ({absent} absent)" if absent else ""),
        "Agenda: " + "; ".join(_sentence(t.removeprefix("the ")) for t in topics),
        "",
    ]
    for topic in topics:
        lines.append(_sentence(topic.removeprefix("the ")))
        status = _fill(rng, rng.choice(_STATUS), day, people, topic)
        lines.append(f"- {rng.choice(people)}: {status}")
        for _ in range(rng.randint(1, 2)):
            lines.append("- " + _fill(rng, discussion.pop(), day, people, topic))
        lines.append("Decision: " + _fill(rng, decisions.pop(), day, people, topic))
        lines.append("")
    lines.append("Action items:")
    for template in rng.sample(_ACTIONS, rng.randint(3, 5)):
        due = day + datetime.timedelta(days=rng.randint(2, 14))
        owner = rng.choice([*people, "(no owner yet)"])
        action = _fill(rng, template, day, people, rng.choice(topics))
        lines.append(f"- {owner}: {action}, due {_WEEKDAYS[due.weekday()]} {due.day}/{due.month}")
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------- chat: team chat logs

_THREADS: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = (
    (
        "incidents",
        (
            (0, "is anyone else seeing 502s from {svc}? dashboards went red a few minutes ago"),
            (1, "yes, error rate is around {n}% and climbing"),
            (2, "{svc} pods keep restarting, looks like they're being OOM killed"),
            (0, "we deployed {ver} at {t0}, could be that"),
            (3, "I'll be incident lead. {p0}, can you roll back {ver}?"),
            (0, "rolling back now"),
            (0, "rollback done, pods are stable"),
            (1, "error rate back under 0.1%"),
            (3, "thanks all. I'll start the postmortem doc, {p2} can you add the memory graphs?"),
            (2, "will do after lunch"),
        ),
    ),
    (
        "releases",
        (
            (0, "release train for {ver} leaves at 15:00, please get your PRs merged by 14:00"),
            (1, "mine is still waiting for review, it's the retry fix for {svc}"),
            (2, "I can review it now"),
            (2, "approved, one nit about the log message but not blocking"),
            (3, "QA found a layout bug on small screens in the settings page, is that a blocker?"),
            (0, "not a blocker, let's ship and fix it in the next patch. {p3} can you file it?"),
            (3, "filed, it's in the backlog with the ui label"),
            (0, "{ver} is out to 5% of users, watching the crash rate"),
            (1, "crash-free sessions at 99.{n}%, same as last release"),
            (0, "going to 100% tomorrow morning if it stays like this"),
        ),
    ),
    (
        "dev-help",
        (
            (0, "does anyone know why the integration tests for {svc} fail only on CI?"),
            (1, "is it the timezone thing again? CI runs in UTC"),
            (0, "ah, the test builds a date from local time, that's it"),
            (2, "we should freeze the clock in those tests, there's a fixture for it"),
            (0, "good idea, I'll switch them to the fixture"),
            (3, "while you're there, the test for refunds takes {n} seconds, any idea why?"),
            (1, "it sleeps waiting for the queue, we could use the in-memory queue instead"),
            (0, "I'll put both changes in one PR and tag you both"),
        ),
    ),
    (
        "planning",
        (
            (0, "we need to pick a date for the team offsite, options are the {d1} or the {d2}"),
            (1, "the {d1} clashes with the quarterly review for me"),
            (2, "either works for me, slight preference for the {d2}"),
            (3, "{d2} is fine, but can we do it somewhere with decent wifi this time?"),
            (0, "ha, noted. let's say the {d2} then. {p1}, could you book the room?"),
            (1, "sure, I'll look at the two places near the station and report back by Friday"),
            (2, "budget for lunch is about {n} per person, right?"),
            (0, "yes, that's what finance approved"),
        ),
    ),
    (
        "data",
        (
            (0, "the weekly revenue report looks {n}% lower than finance's number, any idea?"),
            (1, "the report excludes refunds processed after midnight UTC, finance doesn't"),
            (2, "we changed that cut-off in {ver}, maybe the report wasn't updated"),
            (0, "that would explain it, the gap started the week {ver} shipped"),
            (3, "I can backfill the report with the new cut-off tonight"),
            (0, "please do, and let's add a note to the dashboard so nobody panics on Monday"),
            (1, "I'll tell finance, they were about to escalate"),
        ),
    ),
)


def _chatlog(rng: random.Random, day: datetime.date) -> str:
    day = _workday(day)
    channel, script = rng.choice(_THREADS)
    people = rng.sample(_FIRST, 4)
    minute = rng.randint(8 * 60, 16 * 60)
    later = [day + datetime.timedelta(days=rng.randint(10, 40)) for _ in range(2)]
    values = {
        "svc": rng.choice(_SERVICES),
        "ver": f"v{rng.randint(2, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        "n": str(rng.randint(3, 60)),
        "t0": f"{(minute - 20) // 60:02d}:{(minute - 20) % 60:02d}",
        "d1": f"{later[0].day} {_MONTHS[later[0].month - 1]}",
        "d2": f"{later[1].day} {_MONTHS[later[1].month - 1]}",
        **{f"p{i}": name for i, name in enumerate(people)},
    }
    lines = [f"## #{channel} chat log, {_date(day)}"]
    for who, text in script:
        minute += rng.randint(0, 6)
        body = text
        for key, value in values.items():
            body = body.replace("{" + key + "}", value)
        lines.append(f"[{minute // 60:02d}:{minute % 60:02d}] {people[who]}: {body}")
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------- chat: support conversations

_SUPPORT: tuple[tuple[str, ...], ...] = (
    (
        "Hi, I've been charged twice for my {plan} subscription this month, {cur}{x} each time.",
        "Sorry about that! Could you tell me the last four digits of the card that was charged?",
        "It's {card}. Both charges are on the {dd}th.",
        "Thanks. I can see two payments; one is a retry after a timeout at the bank's side.",
        "So will I get one of them back?",
        "I've asked our billing team to refund the duplicate. It can take 3 to 5 working days.",
    ),
    (
        "The password reset email never arrives. I've tried three times since this morning.",
        "I'm sorry for the trouble. Which email address is on the account?",
        "{email}",
        "Thanks. Our logs show the emails were sent, but your provider rejected them.",
        "Rejected? I get other emails fine.",
        "It looks like a spam filter on your side. I've sent a reset link from a different "
        "server; it should arrive within ten minutes. Please check the spam folder too.",
    ),
    (
        "My order {order} was supposed to arrive on {wd} and it's still not here.",
        "Let me check. The tracking says the parcel is at the local depot since yesterday.",
        "Can it be delivered tomorrow? I'm away from the weekend.",
        "I've asked the courier for a delivery tomorrow, but I can't guarantee the time slot.",
        "And if it doesn't come?",
        "Then I can either resend the order or refund it in full, whichever you prefer.",
    ),
    (
        "The CSV export from the reports page gives me an empty file since yesterday.",
        "Thanks for reporting it. Which report and which date range did you export?",
        "The sales report, last {n} days, all stores.",
        "I can reproduce it: the export fails when the range includes more than one store.",
        "Is there a workaround? I need the numbers for a meeting today.",
        "Exporting each store separately works. Our developers are working on a fix.",
    ),
    (
        "We're a team of {n} and want to move from the {plan} plan to Business. How does billing "
        "work if we switch mid-month?",
        "Good question. You'd pay the difference for the rest of this month, prorated by day.",
        "And do we keep our existing projects and users?",
        "Yes, everything stays; Business just adds single sign-on and the audit log.",
        "Can we try single sign-on before we commit?",
        "I can turn on a 14-day trial of Business for your workspace if you'd like.",
    ),
    (
        "Please delete my account and all my data. I don't use the service any more.",
        "I'm sorry to see you go. Before I do that: would you like an export of your data?",
        "No thanks. How long does deletion take?",
        "The account is closed right away; backups are purged within 30 days.",
        "Will I still be charged for this month?",
        "No, I've cancelled the renewal, so there will be no further charges.",
    ),
)


def _support(rng: random.Random, day: datetime.date) -> str:
    script = rng.choice(_SUPPORT)
    customer = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    agent = rng.choice(_FIRST)
    values = {
        "plan": rng.choice(("Starter", "Plus", "Team")),
        "cur": rng.choice(("$", "£", "€")),
        "x": f"{rng.choice((9, 12, 19, 29, 49))}.{rng.choice(('00', '99', '50'))}",
        "card": f"{rng.randint(1000, 9999)}",
        "dd": str(rng.randint(4, 20)),
        "email": f"{customer.split()[0].lower()}.{rng.randint(10, 99)}@mail.example",
        "order": f"#{rng.randint(100000, 999999)}",
        "wd": rng.choice(_WEEKDAYS[:5]),
        "n": str(rng.randint(7, 90)),
    }
    lines = [f"## Support chat, ticket #{rng.randint(20000, 99999)}, {_date(day)}"]
    for i, text in enumerate(script):
        body = text
        for key, value in values.items():
            body = body.replace("{" + key + "}", value)
        who = f"Customer ({customer})" if i % 2 == 0 else f"Agent ({agent})"
        lines.append(f"{who}: {body}")
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------- json: semi-structured records

_PRODUCTS = (
    ("Desk Lamp", "LED desk lamp with three brightness levels and a USB-C port in the base"),
    ("Travel Mug", "double-walled steel mug that keeps coffee hot for about six hours"),
    ("Wool Blanket", "heavy lambswool throw, machine washable at 30 degrees"),
    ("Chef's Knife", "20 cm blade of German steel with a riveted walnut handle"),
    ("Yoga Mat", "6 mm natural rubber mat with a non-slip texture on both sides"),
    ("Bluetooth Speaker", "splash-proof speaker with twelve hours of battery life"),
    ("Cast Iron Skillet", "pre-seasoned 26 cm pan that works on induction and in the oven"),
    ("Daypack", "20 litre backpack with a padded laptop sleeve and a rain cover"),
    ("Water Bottle", "750 ml bottle with a leak-proof lid, free of BPA"),
    ("Notebook Set", "three A5 notebooks with dotted pages and lay-flat binding"),
    ("Plant Pot", "glazed ceramic pot with a drainage hole and a matching saucer"),
    ("Wireless Mouse", "quiet-click mouse with a receiver that stores inside the shell"),
    ("Rain Jacket", "packable waterproof jacket with taped seams and a stowable hood"),
    ("Tea Kettle", "1.5 litre kettle with temperature presets for green and black tea"),
    ("Cutting Board", "end-grain oak board with a juice groove and rubber feet"),
    ("Headphones", "over-ear headphones with active noise cancelling and a folding frame"),
)
_BRANDS = ("Aurora", "Nordic", "Summit", "Harbor", "Meadow", "Urban", "Pebble", "Cedar", "Atlas")
_COLOURS = ("charcoal", "sage green", "oat", "navy", "terracotta", "white", "mustard", "black")


def _product(rng: random.Random) -> str:
    noun, description = rng.choice(_PRODUCTS)
    brand = rng.choice(_BRANDS)
    sku = f"{brand[:2].upper()}-{rng.randint(1000, 9999)}"
    price = rng.choice((9, 14, 19, 24, 29, 39, 49, 59, 79, 99, 129, 149)) + rng.choice(
        (0.0, 0.5, 0.99, 0.95)
    )
    stock = rng.choice((0, 0, 3, 8, 12, 23, 40, 75, 150))
    reviews = rng.randint(0, 900)
    rating = f"{rng.uniform(3.2, 4.9):.1f}/5 ({reviews} reviews)" if reviews else "no reviews yet"
    availability = f"In stock: {stock}" if stock else "Out of stock, back in 2-3 weeks"
    colours = ", ".join(rng.sample(_COLOURS, rng.randint(1, 3)))
    return (
        f"{brand} {noun} (SKU {sku})\n"
        f"Price: ${_money(price)} | Rating: {rating} | {availability}\n"
        f"{_sentence(description)}. Colours: {colours}.\n\n"
    )


_LOG_MESSAGES = {
    "INFO": (
        "request completed",
        "cache refreshed ({n} keys)",
        "user login succeeded",
        "job finished in {n} ms",
        "scheduled sync started",
        "health check ok",
    ),
    "WARN": (
        "slow query on orders table",
        "retrying upstream call (attempt {k}/3)",
        "rate limit at {k}0% for client {id}",
        "disk usage at {k}0% on /var/lib/data",
        "deprecated endpoint called by client {id}",
    ),
    "ERROR": (
        "upstream timeout calling ledger",
        "failed to send email: SMTP 451 temporary failure",
        "null customer_id in payload",
        "connection refused: redis:6379",
        "payment declined by gateway (code {k}05)",
    ),
}


def _log_line(rng: random.Random, when: datetime.datetime) -> str:
    level = rng.choices(("INFO", "WARN", "ERROR"), weights=(6, 3, 2))[0]
    message = rng.choice(_LOG_MESSAGES[level]).format(
        n=rng.randint(40, 9000), k=rng.randint(1, 9), id=f"c-{rng.randint(100, 999)}"
    )
    latency = f" latency_ms={rng.randint(3, 2500)}" if rng.random() < 0.7 else ""
    stamp = when.isoformat() + f".{rng.randint(0, 999):03d}Z"
    return (
        f"{stamp} {level:<5} {rng.choice(_SERVICES)} req={rng.getrandbits(24):06x}"
        f'{latency} msg="{message}"\n'
    )


_TITLES = (
    "Head of Research", "Operations Manager", "Senior Accountant", "Product Owner",
    "Sales Director", "Office Manager", "Lead Architect", "HR Business Partner",
    "Customer Success Manager", "Chief Technology Officer",
)  # fmt: skip
_PHONES = ("+44 20 7946 0{:03d}", "+1 555 01{:02d}", "+61 491 570 {:03d}")


def _contact(rng: random.Random) -> str:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    company, domain = rng.choice(_COMPANIES)
    city, _ = rng.choice(_CITIES)
    title = rng.choice(_TITLES)
    fmt = rng.choice(_PHONES)
    phone = fmt.format(rng.randint(0, 99 if "{:02d}" in fmt else 999))
    email = f"{first.lower()}.{last.lower()}@{domain}.example"
    street = f"{rng.randint(1, 180)} {rng.choice(_STREETS)}"
    style = rng.randrange(3)
    if style == 0:
        body = f"{first} {last} | {title}\n{company}, {street}, {city}\n{email} · {phone}\n"
    elif style == 1:
        mobile = "" if rng.random() < 0.5 else f"\nMobile: {fmt.format(rng.randint(0, 99))}"
        body = f"Best regards,\n{first} {last}\n{title}, {company} ({city})\nT: {phone}{mobile}\n"
    else:
        body = f"{first} {last.upper()}\n{company} · {city}\nEmail: {email}\n"
    return "--\n" + body + "\n"


_ITEMS = (
    ("Ceramic Mug, blue", 12.5), ("French Press 1L", 34.0), ("Linen Napkins (set of 4)", 18.0),
    ("Coffee Beans 500g", 11.9), ("Bamboo Toothbrush (4 pack)", 7.5), ("Desk Organiser", 22.0),
    ("LED Bulb E27", 4.99), ("Phone Case", 15.0), ("Garden Gloves", 9.95),
    ("Scented Candle", 16.5), ("USB-C Cable 2m", 8.99), ("Picture Frame A4", 13.0),
)  # fmt: skip


def _order(rng: random.Random, day: datetime.date) -> str:
    number = rng.randint(40000, 99999)
    name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    city, currency = rng.choice(_CITIES)
    lines = [
        f"Order #{number} - placed {_date(day, weekday=False)}",
        f"Ship to: {name}, {rng.randint(1, 180)} {rng.choice(_STREETS)}, {city}",
    ]
    total = 0.0
    for item, price in rng.sample(_ITEMS, rng.randint(1, 4)):
        quantity = rng.choice((1, 1, 1, 2, 3))
        total += quantity * price
        lines.append(f"{quantity} x {item} @ {_money(price)} {currency}")
    shipping = rng.choice((0.0, 3.5, 4.9, 6.0))
    total += shipping
    card = rng.randint(1000, 9999)
    lines.append(
        f"Shipping: {_money(shipping) if shipping else 'free'} · Total: {_money(total)} "
        f"{currency} · Paid by card ending {card}"
    )
    return "\n".join(lines) + "\n\n"


_EVENTS = (  # title, blurb, earliest and latest start hour
    ("Jazz in the Park", "local trios in the afternoon and a big-band finale", 14, 18),
    ("Night Market", "street food, crafts and live music along the river", 17, 19),
    ("Repair Café", "volunteers fix clothes, bikes and small appliances for free", 10, 14),
    ("Beginners' Pottery Workshop", "two hours at the wheel, clay and firing included", 10, 18),
    ("Charity 5K Fun Run", "a flat route round the lake, medals for every finisher", 8, 10),
    ("Author Talk and Signing", "a local novelist reads from her new book", 18, 19),
    ("Farmers' Market", "seasonal produce, bread and cheese from nearby farms", 8, 9),
    ("Board Game Night", "hundreds of games to borrow, teachers on hand", 18, 19),
    ("Outdoor Cinema", "a classic film on a big screen, deckchairs provided", 20, 21),
    ("Community Choir Concert", "spring programme of folk songs and gospel", 15, 19),
    ("Coding Club for Kids", "build a simple game, ages 9 to 13, laptops provided", 10, 16),
    ("Bird Walk at Dawn", "a guided walk with the local wildlife trust", 5, 6),
)
_VENUES = (
    "Riverside Gardens", "the Old Town Hall", "Central Library", "St Mark's Church Hall",
    "the Corn Exchange", "Victoria Park", "the Community Centre", "Harbour Warehouse",
)  # fmt: skip


def _event(rng: random.Random, day: datetime.date) -> str:
    title, blurb, earliest, latest = rng.choice(_EVENTS)
    city, currency = rng.choice(_CITIES)
    start = rng.randint(earliest, latest)
    end = start + rng.randint(1, 3)
    price = (
        "Free entry"
        if rng.random() < 0.4
        else f"Tickets {currency} {rng.choice((3, 5, 8, 10, 12, 15, 20))}"
    )
    extra = rng.choice(
        ("Family friendly.", "Booking recommended.", "Wheelchair accessible.", "Dogs welcome.")
    )
    return (
        f"{title} - {_WEEKDAYS[day.weekday()][:3]} {day.day} {_MONTHS[day.month - 1]}, "
        f"{start:02d}:00-{end:02d}:00\n"
        f"{rng.choice(_VENUES)}, {city} · {price}\n"
        f"{_sentence(blurb)}. {extra}\n\n"
    )


_JOBS = (  # title, requirements, lowest and highest salary in thousands
    ("Senior Data Engineer", "5+ years with Python and SQL, experience with Airflow", 70, 110),
    ("Frontend Developer", "3+ years with TypeScript and React, an eye for accessibility", 50, 85),
    ("Product Designer", "a portfolio of shipped work, Figma, user research experience", 48, 80),
    ("Site Reliability Engineer", "Kubernetes, Terraform and on-call experience", 65, 105),
    ("Financial Controller", "qualified accountant, IFRS, experience with audits", 60, 95),
    ("Customer Support Lead", "2+ years leading a support team, calm under pressure", 38, 55),
    ("Marketing Manager", "B2B campaigns, budget ownership, strong writing", 45, 75),
    (
        "Warehouse Supervisor",
        "forklift licence, shift planning, health and safety training",
        32,
        45,
    ),
)


def _job(rng: random.Random, day: datetime.date) -> str:
    title, needs, lowest, highest = rng.choice(_JOBS)
    company, _ = rng.choice(_COMPANIES)
    city, currency = rng.choice(_CITIES)
    policy = rng.choice(("on-site", "hybrid, 3 days in the office", "fully remote", "hybrid"))
    low = rng.randint(lowest, (lowest + highest) // 2) * 1000
    high = rng.randint(low // 1000 + 5, highest) * 1000
    deadline = day + datetime.timedelta(days=rng.randint(14, 45))
    language = rng.choice(("", "", " German is a plus.", " Dutch is a plus.", " French required."))
    return (
        f"{title} - {company}\n"
        f"{city} ({policy}) · {currency} {low:,}-{high:,} a year · "
        f"{rng.choice(('Full-time', 'Full-time', 'Part-time (30h)', '12-month contract'))}\n"
        f"Requirements: {needs}.{language}\n"
        f"Apply by {deadline.day} {_MONTHS[deadline.month - 1]}.\n\n"
    )


_MERCHANTS = (
    ("CARD PAYMENT", "GREENLEAF GROCERS", (-95, -8)),
    ("CARD PAYMENT", "CITY TRANSIT TOPUP", (-40, -10)),
    ("CARD PAYMENT", "LA PIAZZA RESTAURANT", (-85, -18)),
    ("CARD PAYMENT", "CORNER CAFE", (-12, -3)),
    ("DIRECT DEBIT", "BRIGHTWELL INSURANCE", (-60, -25)),
    ("DIRECT DEBIT", "NORTHSIDE ENERGY", (-140, -55)),
    ("STANDING ORDER", "RENT FLAT 2", (-1250, -850)),
    ("ATM WITHDRAWAL", "HIGH ST BRANCH", (-100, -20)),
    ("TRANSFER IN", "FROM J WEBER", (15, 120)),
    ("REFUND", "ONLINE BOOKSHOP", (8, 30)),
    ("CARD PAYMENT", "STREAMFLIX SUBSCRIPTION", (-16, -8)),
    ("CARD PAYMENT", "FUEL STATION 24", (-70, -30)),
)


def _statement(rng: random.Random, day: datetime.date) -> tuple[str, list[int]]:
    """A month's statement: its text and the offsets of its transaction lines in it."""
    balance = rng.randint(400, 4000) + rng.randint(0, 99) / 100
    account = rng.randint(1000, 9999)
    text = f"Statement for account ending {account}, {_MONTHS[day.month - 1]} {day.year}\n"
    starts = []
    dates = sorted(rng.randint(1, 28) for _ in range(rng.randint(14, 22)))
    for j, d in enumerate(dates):
        if j == 0:
            kind, merchant, amount = (
                "SALARY",
                f"{rng.choice(_COMPANIES)[0].upper()} PAYROLL",
                2850.0,
            )
        else:
            kind, merchant, (lo, hi) = rng.choice(_MERCHANTS)
            amount = rng.randint(lo * 100, hi * 100) / 100
            if kind == "STANDING ORDER":
                amount = float(round(amount, -1))
        balance += amount
        starts.append(len(text))
        text += (
            f"{d:02d}/{day.month:02d}/{day.year}  {kind:<15} {merchant:<26} "
            f"{amount:>10,.2f}  balance {balance:,.2f}\n"
        )
    return text + "\n", starts


# ---------------------------------------------------------------- assembling the corpora

_Block = Callable[[random.Random, datetime.date], str]


class _Builder:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.starts: dict[str, list[int]] = {}

    def add(self, kind: str, text: str, record_starts: Sequence[int] = (0,)) -> None:
        self.starts.setdefault(kind, []).extend(self.size + s for s in record_starts)
        self.parts.append(text)
        self.size += len(text)

    def section(self, kind: str, block: _Block, seed: int, chars: int) -> None:
        rng = random.Random(seed)
        day = datetime.date(2025, 1, 6)
        end = self.size + chars
        while self.size < end:
            self.add(kind, block(rng, day))
            day += datetime.timedelta(days=rng.randint(1, 4))

    def material(self) -> Material:
        return Material("".join(self.parts), {k: tuple(v) for k, v in self.starts.items()})


def chat_material() -> Material:
    """Meeting notes, team chat logs and support chats (about 140,000 characters)."""
    b = _Builder()
    b.section("meeting", _meeting, 101, 60_000)
    b.section("chatlog", _chatlog, 102, 40_000)
    b.section("support", _support, 103, 40_000)
    material = b.material()
    incidents = tuple(
        o for o in material.starts["chatlog"] if material.text.startswith("## #incidents", o)
    )
    return Material(material.text, {**material.starts, "incident": incidents})


def json_material() -> Material:
    """Records to extract fields from, one section per kind (about 130,000 characters)."""
    b = _Builder()
    b.section("products", lambda rng, _day: _product(rng), 201, 19_000)
    rng = random.Random(202)
    when = datetime.datetime(2025, 3, 12, 8, 0, 0)
    end = b.size + 19_000
    while b.size < end:
        b.add("logs", _log_line(rng, when))
        when += datetime.timedelta(seconds=rng.randint(1, 90))
    b.section("contacts", lambda rng, _day: _contact(rng), 203, 18_000)
    b.section("orders", _order, 204, 19_000)
    b.section("events", _event, 205, 19_000)
    b.section("jobs", _job, 206, 19_000)
    rng = random.Random(207)
    day = datetime.date(2025, 1, 1)
    end = b.size + 19_000
    while b.size < end:
        text, starts = _statement(rng, day)
        b.add("statements", text, starts)
        day = datetime.date(day.year + day.month // 12, day.month % 12 + 1, 1)
    return b.material()
