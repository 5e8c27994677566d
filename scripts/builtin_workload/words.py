"""What the generated material is made of: invented names, places and companies, dates, and the
builder that records where each record of a corpus starts.

Every name, company, address, phone number (fictional ranges) and email domain (`.example`)
is invented. Fixed seeds, no locale, no clock: the same text every time.
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


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
FIRST = (
    "Amara", "Jonas", "Priya", "Mateo", "Hannah", "Kenji", "Fatima", "Lucas", "Sofia", "Tomasz",
    "Aisha", "Daniel", "Mei", "Oliver", "Ines", "Ravi", "Elena", "Samuel", "Yuki", "Noah",
    "Chloe", "Emeka", "Lena", "Marco", "Zara", "Felix", "Nadia", "Owen", "Leila", "Hugo",
)  # fmt: skip
LAST = (
    "Okafor", "Weber", "Sharma", "Garcia", "Lindqvist", "Tanaka", "Haddad", "Moreau", "Rossi",
    "Nowak", "Bello", "Cohen", "Chen", "Hughes", "Costa", "Iyer", "Petrova", "Mensah", "Sato",
    "Fischer", "Dubois", "Eze", "Vogel", "Bianchi", "Karimi", "Brandt", "Popescu", "Walsh",
)  # fmt: skip
TEAMS = (
    "Platform", "Mobile", "Payments", "Growth", "Data", "Support", "Design", "Infrastructure",
    "Marketing", "Security", "Search", "Billing",
)  # fmt: skip
PROJECTS = (
    "the checkout redesign", "the data warehouse migration", "the onboarding emails",
    "the Android 4.2 release", "the pricing page experiment", "the SOC 2 audit",
    "search relevance tuning", "the office move", "the customer portal", "the billing migration",
    "the new status page", "the iOS widget", "the partner API", "the accessibility review",
    "the recommendation service", "the spring campaign",
)  # fmt: skip
SERVICES = (
    "payment-api", "auth-service", "search-indexer", "checkout-web", "notification-worker",
    "inventory-sync", "report-builder", "media-resizer",
)  # fmt: skip
CITIES = (
    ("London", "GBP"), ("Leeds", "GBP"), ("Berlin", "EUR"), ("Rotterdam", "EUR"), ("Lyon", "EUR"),
    ("Milan", "EUR"), ("Dublin", "EUR"), ("Lisbon", "EUR"), ("Toronto", "CAD"),
    ("Austin", "USD"), ("Denver", "USD"), ("Melbourne", "AUD"),
)  # fmt: skip
STREETS = (
    "Harbour Street", "Linden Avenue", "Mill Lane", "Queen's Road", "Canal Walk", "Station Road",
    "Orchard Close", "Market Square", "Rue des Tanneurs", "Via Garibaldi", "Kastanienallee",
    "Maple Drive",
)  # fmt: skip
COMPANIES = (
    ("Lumen Biotech", "lumenbio"), ("Northwind Logistics", "northwind"),
    ("Harbourline Shipping", "harbourline"), ("Bluefern Analytics", "bluefern"),
    ("Copperleaf Studio", "copperleaf"), ("Tidewater Energy", "tidewater"),
    ("Kestrel Robotics", "kestrel"), ("Oakridge Dental", "oakridge"),
    ("Silverpine Software", "silverpine"), ("Meridian Foods", "meridianfoods"),
    ("Brightwell Insurance", "brightwell"), ("Fennel & Finch Architects", "fennelfinch"),
)  # fmt: skip


def date(day: datetime.date, weekday: bool = True) -> str:
    text = f"{day.day} {MONTHS[day.month - 1]} {day.year}"
    return f"{WEEKDAYS[day.weekday()]} {text}" if weekday else text


def workday(day: datetime.date) -> datetime.date:
    """`day`, or the Monday after it when it falls on a weekend."""
    return day + datetime.timedelta(days=max(0, 7 - day.weekday()) if day.weekday() > 4 else 0)


def sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def money(amount: float) -> str:
    return f"{amount:,.2f}"


# ---------------------------------------------------------------- assembling the corpora

_Block = Callable[[random.Random, datetime.date], str]


class Builder:
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
