"""The `json` material: semi-structured text to extract fields from: product listings, service log
lines, email signatures, order confirmations, event listings, job adverts and bank statement
lines, one section per kind."""

from __future__ import annotations

import datetime
import random

from words import (
    CITIES,
    COMPANIES,
    FIRST,
    LAST,
    MONTHS,
    SERVICES,
    STREETS,
    WEEKDAYS,
    Builder,
    Material,
    date,
    money,
    sentence,
)

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
        f"Price: ${money(price)} | Rating: {rating} | {availability}\n"
        f"{sentence(description)}. Colours: {colours}.\n\n"
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
        f"{stamp} {level:<5} {rng.choice(SERVICES)} req={rng.getrandbits(24):06x}"
        f'{latency} msg="{message}"\n'
    )


_TITLES = (
    "Head of Research", "Operations Manager", "Senior Accountant", "Product Owner",
    "Sales Director", "Office Manager", "Lead Architect", "HR Business Partner",
    "Customer Success Manager", "Chief Technology Officer",
)  # fmt: skip
_PHONES = ("+44 20 7946 0{:03d}", "+1 555 01{:02d}", "+61 491 570 {:03d}")


def _contact(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    company, domain = rng.choice(COMPANIES)
    city, _ = rng.choice(CITIES)
    title = rng.choice(_TITLES)
    fmt = rng.choice(_PHONES)
    phone = fmt.format(rng.randint(0, 99 if "{:02d}" in fmt else 999))
    email = f"{first.lower()}.{last.lower()}@{domain}.example"
    street = f"{rng.randint(1, 180)} {rng.choice(STREETS)}"
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
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    city, currency = rng.choice(CITIES)
    lines = [
        f"Order #{number} - placed {date(day, weekday=False)}",
        f"Ship to: {name}, {rng.randint(1, 180)} {rng.choice(STREETS)}, {city}",
    ]
    total = 0.0
    for item, price in rng.sample(_ITEMS, rng.randint(1, 4)):
        quantity = rng.choice((1, 1, 1, 2, 3))
        total += quantity * price
        lines.append(f"{quantity} x {item} @ {money(price)} {currency}")
    shipping = rng.choice((0.0, 3.5, 4.9, 6.0))
    total += shipping
    card = rng.randint(1000, 9999)
    lines.append(
        f"Shipping: {money(shipping) if shipping else 'free'} · Total: {money(total)} "
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
    city, currency = rng.choice(CITIES)
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
        f"{title} - {WEEKDAYS[day.weekday()][:3]} {day.day} {MONTHS[day.month - 1]}, "
        f"{start:02d}:00-{end:02d}:00\n"
        f"{rng.choice(_VENUES)}, {city} · {price}\n"
        f"{sentence(blurb)}. {extra}\n\n"
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
    company, _ = rng.choice(COMPANIES)
    city, currency = rng.choice(CITIES)
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
        f"Apply by {deadline.day} {MONTHS[deadline.month - 1]}.\n\n"
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
    text = f"Statement for account ending {account}, {MONTHS[day.month - 1]} {day.year}\n"
    starts = []
    dates = sorted(rng.randint(1, 28) for _ in range(rng.randint(14, 22)))
    for j, d in enumerate(dates):
        if j == 0:
            kind, merchant, amount = (
                "SALARY",
                f"{rng.choice(COMPANIES)[0].upper()} PAYROLL",
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


def json_material() -> Material:
    """Records to extract fields from, one section per kind (about 130,000 characters)."""
    b = Builder()
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
