"""The `chat` material: what a user pastes into a multi-turn chat: meeting notes, team chat logs
(the incident channel's logs also listed as kind `incident`) and customer-support
conversations, one section per kind."""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence

from words import (
    FIRST,
    LAST,
    MONTHS,
    PROJECTS,
    SERVICES,
    TEAMS,
    WEEKDAYS,
    Builder,
    Material,
    date,
    sentence,
    workday,
)

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
        date=date(later, weekday=False),
        wd=rng.choice(WEEKDAYS[:5]),
        role=rng.choice(_ROLES),
    )


def _meeting(rng: random.Random, day: datetime.date) -> str:
    day = workday(day)
    team = rng.choice(TEAMS)
    people = rng.sample(FIRST, rng.randint(4, 6))
    absent = people.pop() if rng.random() < 0.4 else ""
    topics = rng.sample(PROJECTS, 3)
    discussion = rng.sample(_DISCUSS, 6)
    decisions = rng.sample(_DECISIONS, 3)
    lines = [
        f"## Meeting notes: {team} weekly sync, {date(day)}",
        "Attendees: " + ", ".join(people) + (f" ({absent} absent)" if absent else ""),
        "Agenda: " + "; ".join(sentence(t.removeprefix("the ")) for t in topics),
        "",
    ]
    for topic in topics:
        lines.append(sentence(topic.removeprefix("the ")))
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
        lines.append(f"- {owner}: {action}, due {WEEKDAYS[due.weekday()]} {due.day}/{due.month}")
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
    day = workday(day)
    channel, script = rng.choice(_THREADS)
    people = rng.sample(FIRST, 4)
    minute = rng.randint(8 * 60, 16 * 60)
    later = [day + datetime.timedelta(days=rng.randint(10, 40)) for _ in range(2)]
    values = {
        "svc": rng.choice(SERVICES),
        "ver": f"v{rng.randint(2, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        "n": str(rng.randint(3, 60)),
        "t0": f"{(minute - 20) // 60:02d}:{(minute - 20) % 60:02d}",
        "d1": f"{later[0].day} {MONTHS[later[0].month - 1]}",
        "d2": f"{later[1].day} {MONTHS[later[1].month - 1]}",
        **{f"p{i}": name for i, name in enumerate(people)},
    }
    lines = [f"## #{channel} chat log, {date(day)}"]
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
    customer = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    agent = rng.choice(FIRST)
    values = {
        "plan": rng.choice(("Starter", "Plus", "Team")),
        "cur": rng.choice(("$", "£", "€")),
        "x": f"{rng.choice((9, 12, 19, 29, 49))}.{rng.choice(('00', '99', '50'))}",
        "card": f"{rng.randint(1000, 9999)}",
        "dd": str(rng.randint(4, 20)),
        "email": f"{customer.split()[0].lower()}.{rng.randint(10, 99)}@mail.example",
        "order": f"#{rng.randint(100000, 999999)}",
        "wd": rng.choice(WEEKDAYS[:5]),
        "n": str(rng.randint(7, 90)),
    }
    lines = [f"## Support chat, ticket #{rng.randint(20000, 99999)}, {date(day)}"]
    for i, text in enumerate(script):
        body = text
        for key, value in values.items():
            body = body.replace("{" + key + "}", value)
        who = f"Customer ({customer})" if i % 2 == 0 else f"Agent ({agent})"
        lines.append(f"{who}: {body}")
    return "\n".join(lines) + "\n\n"


def chat_material() -> Material:
    """Meeting notes, team chat logs and support chats (about 140,000 characters)."""
    b = Builder()
    b.section("meeting", _meeting, 101, 60_000)
    b.section("chatlog", _chatlog, 102, 40_000)
    b.section("support", _support, 103, 40_000)
    material = b.material()
    incidents = tuple(
        o for o in material.starts["chatlog"] if material.text.startswith("## #incidents", o)
    )
    return Material(material.text, {**material.starts, "incident": incidents})
