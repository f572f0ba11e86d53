"""A generated mailbox: a few hundred emails, deterministic from a seed, with facts planted in them.

Each planted fact (a flight's confirmation code, a parcel's tracking number...) lives in exactly
one email, so a question about it has one right answer. Codes are random letters and digits that
nothing else in the mailbox contains; the filler mail mentions the same cities, stores and people
so that a search has to be specific.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import Field

OWNER = "Alex Morgan <alex.morgan@example.com>"
SIZE = 300
SNIPPET_CHARS = 90
MAX_RESULTS = 50
CITIES = (
    "Lisbon",
    "Porto",
    "Madrid",
    "Berlin",
    "Vienna",
    "Prague",
    "Oslo",
    "Dublin",
    "Rome",
    "Athens",
    "Krakow",
    "Tallinn",
    "Seville",
    "Munich",
    "Zurich",
    "Copenhagen",
)
HOTELS = ("Hotel Aurora", "The Linden House", "Casa Azul", "Harbour Inn", "Grand Meridian", "The Old Mill")
STORES = (
    "Northwind Outfitters",
    "Pixel Depot",
    "Greenleaf Books",
    "Kettle & Co",
    "Brightside Electronics",
    "Maple Home Goods",
)
VENUES = ("the lake cabin", "the city loft", "the beach cottage", "the mountain chalet", "the garden flat")
PEOPLE = (
    "Priya Shah",
    "Tom Becker",
    "Lena Novak",
    "Marco Rossi",
    "Aisha Bello",
    "Jonas Berg",
    "Chen Wei",
    "Sofia Lindqvist",
)
TOPICS = ("budget review", "design sync", "quarterly planning", "hiring", "roadmap", "vendor", "onboarding")
VENDORS = ("CloudNest Hosting", "BrightPower Energy", "FiberLink Internet", "Acme Insurance")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
TIMES = ("9:00 AM", "9:30 AM", "10:00 AM", "11:15 AM", "1:00 PM", "2:30 PM", "3:45 PM", "4:15 PM")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
NEWSLETTERS = (
    (
        "Wanderlust Weekly <news@wanderlust.example>",
        "Cheap flights to {city} this spring",
        "Fares to {city} and {city2} are down this week. Book early for the best seats and check our guide.",
    ),
    (
        "City Guides <hello@cityguides.example>",
        "48 hours in {city}",
        "Where to eat, what to see and how to get around {city} without a car, plus a day trip idea.",
    ),
    (
        "{store} <deals@shop.example>",
        "{store}: new arrivals",
        "Fresh picks from {store} this week, with free returns on every order and member prices.",
    ),
    (
        "Team Updates <updates@work.example>",
        "Weekly digest: {topic}",
        "Notes from this week's {topic} discussions, links to the shared documents and next steps.",
    ),
    (
        "{person} <{handle}@work.example>",
        "Lunch on {day}?",
        "Hi Alex, are you free for lunch on {day}? There is a new place near the office I want to try.",
    ),
    (
        "{person} <{handle}@work.example>",
        "Slides for the {topic} meeting",
        "Hi Alex, I uploaded the slides for the {topic} meeting to the shared drive. Comments welcome.",
    ),
    (
        "Social Network <notify@social.example>",
        "{person} commented on your photo",
        "{person} and 3 others reacted to your photo from {city}. See what they said.",
    ),
)


@dataclass
class Email:
    id: str
    sender: str
    date: datetime
    subject: str
    body: str
    to: str = OWNER

    def searchable(self) -> str:
        return f"{self.sender} {self.subject} {self.body}".lower()


@dataclass
class Fact:
    """A question whose answer is in exactly one email of the mailbox."""

    question: str
    answer: str
    difficulty: int
    tools: list[str] = field(default_factory=lambda: ["search_emails", "read_email"])


def _handle(person: str) -> str:
    return person.lower().replace(" ", ".")


class _Writer:
    """Accumulates emails and facts; dates and codes come from one seeded stream."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"email/{seed}")
        self.drafts: list[tuple[datetime, str, str, str]] = []
        self.facts: list[Fact] = []
        self._codes: set[str] = set()

    def code(self, length: int = 6, alphabet: str = string.ascii_uppercase + string.digits) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(length))
            if value not in self._codes and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                self._codes.add(value)
                return value

    def date(self, start_month: int = 1, end_month: int = 12) -> datetime:
        start = datetime(2024, start_month, 1)
        end = datetime(2024, end_month, 28)
        minutes = self.rng.randint(0, int((end - start).total_seconds() // 60))
        return start + timedelta(minutes=minutes)

    def mail(self, when: datetime, sender: str, subject: str, body: str) -> None:
        self.drafts.append((when, sender, subject, body))

    def flights(self, cities: list[str]) -> None:
        for city in cities:
            code = self.code()
            number = f"SW {self.rng.randint(100, 999)}"
            self.mail(
                self.date(),
                "SkyWay Airlines <bookings@skyway.example>",
                f"Your flight to {city} is confirmed",
                f"Confirmation code: {code}. Flight {number} to {city} is booked for one adult passenger. "
                "Check in online 24 hours before departure.",
            )
            self.facts.append(
                Fact(f"What is the confirmation code for my flight to {city}?", code, 1, ["search_emails"])
            )

    def hotels(self, cities: list[str]) -> None:
        for hotel, city in zip(self.rng.sample(HOTELS, len(cities)), cities, strict=True):
            number = self.code(8, string.digits + "ABCDEF")
            self.mail(
                self.date(),
                f"{hotel} <stay@{_handle(hotel)}.example>",
                f"Your stay at {hotel}, {city}",
                f"Dear Alex, thank you for choosing {hotel} in {city}. Breakfast is served from 7 to 10 and "
                f"late check-out can be arranged at the front desk. Your reservation number is {number}. "
                "We look forward to welcoming you.",
            )
            self.facts.append(Fact(f"What is my reservation number for the hotel in {city}?", number, 2))

    def orders(self, stores: list[str]) -> None:
        for store in stores:
            order, tracking = f"{self.rng.randint(10000, 99999)}", self.code(10)
            placed = self.date(1, 11)
            address = f"{store} <orders@{_handle(store).replace('&', 'and')}.example>"
            self.mail(
                placed,
                address,
                f"Order {order} received",
                f"Thanks for your order {order} from {store}. We will email you again when it ships.",
            )
            self.mail(
                placed + timedelta(days=self.rng.randint(1, 4)),
                address,
                f"Order {order} has shipped",
                f"Good news: your order {order} is on its way and should arrive within a week. "
                f"Tracking number: {tracking}.",
            )
            self.facts.append(Fact(f"What is the tracking number for my order from {store}?", tracking, 3))

    def rentals(self, venues: list[str]) -> None:
        for venue in venues:
            host = self.rng.choice(PEOPLE)
            password = self.code(8, string.ascii_lowercase + string.digits)
            booked = self.date(1, 10)
            address = f"{host} <{_handle(host)}@stays.example>"
            self.mail(
                booked,
                address,
                f"Booking request for {venue}",
                f"Hi Alex, I accepted your booking for {venue}. I will send the check-in details closer to the date.",
            )
            self.mail(
                booked + timedelta(days=self.rng.randint(5, 30)),
                address,
                f"Check-in details for {venue}",
                f"Hi Alex, the key is in the lockbox by the door (code on arrival). Please keep noise down "
                f"after 10 PM. The Wi-Fi password at {venue} is {password}. Enjoy your stay!",
            )
            self.facts.append(Fact(f"What is the Wi-Fi password at {venue}?", password, 3))

    def meetings(self, topics: list[str]) -> None:
        for topic, person in zip(topics, self.rng.sample(PEOPLE, len(topics)), strict=True):
            (day1, day2), (time1, time2) = self.rng.sample(DAYS, 2), self.rng.sample(TIMES, 2)
            sent = self.date(1, 11)
            address = f"{person} <{_handle(person)}@work.example>"
            self.mail(
                sent,
                address,
                f"{topic.capitalize()} meeting",
                f"Hi Alex, let's meet on {day1} at {time1} for the {topic} meeting. I'll book a room.",
            )
            self.mail(
                sent + timedelta(days=1),
                address,
                f"Re: {topic.capitalize()} meeting",
                f"Sorry Alex, something came up. Can we move the {topic} meeting to {day2} at {time2} instead?",
            )
            self.facts.append(Fact(f"{person} moved our {topic} meeting. What is the new time?", time2, 4))

    def invoices(self, vendors: list[str]) -> None:
        for vendor in vendors:
            months = sorted(self.rng.sample(range(1, 12), self.rng.randint(3, 4)))
            amounts = [self.rng.randint(1500, 30000) for _ in months]
            for month, cents in zip(months, amounts, strict=True):
                self.mail(
                    self.date(month + 1, month + 1),
                    f"{vendor} <billing@{_handle(vendor)}.example>",
                    f"Invoice for {MONTHS[month - 1]} 2024",
                    f"Amount due: ${cents // 100}.{cents % 100:02d}. Your {vendor} invoice for "
                    f"{MONTHS[month - 1]} 2024 is ready and will be charged to your card on file.",
                )
            month, cents = self.rng.choice(list(zip(months, amounts, strict=True)))
            self.facts.append(
                Fact(
                    f"How much was my {vendor} invoice for {MONTHS[month - 1]} 2024?",
                    f"{cents // 100}.{cents % 100:02d}",
                    4,
                    ["search_emails"],
                )
            )
            total = sum(amounts)
            self.facts.append(
                Fact(
                    f"What is the total of all my {vendor} invoices in 2024?",
                    f"{total // 100}.{total % 100:02d}",
                    5,
                    ["search_emails"],
                )
            )

    def filler(self, count: int) -> None:
        for _ in range(count):
            sender, subject, body = self.rng.choice(NEWSLETTERS)
            person = self.rng.choice(PEOPLE)
            city, city2 = self.rng.sample(CITIES, 2)
            values = {
                "city": city,
                "city2": city2,
                "store": self.rng.choice(STORES),
                "topic": self.rng.choice(TOPICS),
                "person": person,
                "handle": _handle(person),
                "day": self.rng.choice(DAYS),
            }
            self.mail(self.date(), sender.format(**values), subject.format(**values), body.format(**values))


class Mailbox:
    TOOL_NAMES = ("search_emails", "read_email")

    def __init__(self, seed: int = 0) -> None:
        w = _Writer(seed)
        cities = w.rng.sample(CITIES, 10)
        w.flights(cities[:6])
        w.hotels(cities[4:8])
        w.orders(w.rng.sample(STORES, 5))
        w.rentals(w.rng.sample(VENUES, 4))
        w.meetings(w.rng.sample(TOPICS, 5))
        w.invoices(list(VENDORS))
        w.filler(SIZE - len(w.drafts))
        ordered = sorted(w.drafts, key=lambda d: d[0])
        self.emails = {
            f"msg-{n:04d}": Email(f"msg-{n:04d}", sender, when, subject, body)
            for n, (when, sender, subject, body) in enumerate(ordered, start=1)
        }
        self.facts = w.facts

    def search_emails(
        self,
        query: Annotated[
            str, Field(description="words that must all appear in the email (sender, subject or body)")
        ] = "",
        sender: Annotated[str, Field(description="only emails whose sender name or address contains this")] = "",
        after: Annotated[str, Field(description="only emails sent on or after this date, YYYY-MM-DD")] = "",
        before: Annotated[str, Field(description="only emails sent before this date, YYYY-MM-DD")] = "",
        limit: Annotated[int, Field(description=f"how many results to show, 1 to {MAX_RESULTS}")] = 10,
    ) -> str:
        """Search the mailbox, newest first. Each line: id | date | sender | subject | start of the body."""
        words, who = query.lower().split(), sender.lower()
        start, end = _day(after, "after"), _day(before, "before")
        found = [
            e
            for e in reversed(self.emails.values())
            if all(w in e.searchable() for w in words)
            and who in e.sender.lower()
            and (start is None or e.date >= start)
            and (end is None or e.date < end)
        ]
        if not found:
            return "No emails match."
        limit = max(1, min(limit, MAX_RESULTS))
        lines = [f"{e.id} | {e.date:%Y-%m-%d} | {e.sender} | {e.subject} | {_snippet(e.body)}" for e in found[:limit]]
        if len(found) > limit:
            lines.append(f"({limit} of {len(found)} matching emails shown)")
        return "\n".join(lines)

    def read_email(
        self, email_id: Annotated[str, Field(description="the email's id from search_emails, e.g. msg-0042")]
    ) -> str:
        """Read one email in full: sender, recipient, date, subject and body."""
        e = self.emails.get(email_id.strip())
        if e is None:
            raise ValueError(f"no email with id {email_id!r}; ids look like msg-0042 (see search_emails)")
        return f"From: {e.sender}\nTo: {e.to}\nDate: {e.date:%Y-%m-%d %H:%M}\nSubject: {e.subject}\n\n{e.body}"


def _day(value: str, name: str) -> datetime | None:
    if not value.strip():
        return None
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d")
    except ValueError:
        raise ValueError(f"{name} must be a date like 2024-03-31, not {value!r}") from None


def _snippet(body: str) -> str:
    return body if len(body) <= SNIPPET_CHARS else body[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " ..."
