"""Long, templated histories of eight users with the bot, for the hard retrieval evaluation.

Written for `bench/retrieval_eval.py`: the facts, names and sentence templates below are
our own; `build()` turns them into histories and questions reproducibly from a seed.
Each user talks to the bot in 18 sessions over nine months (about 430 turns): about the
people in their life (named friends and family, their pets, partners, jobs, trips and
hobbies), the things they own, where they live (one move), short replies whose meaning lies
in the turn before ("Yes! It was amazing"), requests for advice whose answer is in the bot's
reply, and many everyday requests (sums, weather, translations, code) as distractors. Every
fact has a look-alike about someone else ("Tom keeps saying he'll try salsa lessons one
day" beside "Priya started salsa lessons"), and every user has the same kinds of fact about
different people, so similar-sounding facts about other people and things abound.

Questions (about 90 per user) name the person and the thing, each with the ids of its
evidence turns and a kind: `fact`, `when` (asks for a time), `short` (the answer is a short
reply), `update` (a fact that changed: only the newest turn counts), `multi` (evidence in two
sessions), `window` ("what did I tell you about Priya last week?": any turn naming that
person in the window counts) and `bot` (the answer is in what the bot said). Users of
`HELD_OUT` form the held-out split: no weight is chosen on them.

Pure data: imports nothing from the project.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = ["HELD_OUT", "USERS", "HardQuestion", "HardTurn", "History", "build"]

SEED = 20261201
USERS = ("ines", "marek", "sofia", "kwame", "lucy", "tomas", "aiko", "dev")
HELD_OUT = frozenset({"aiko", "dev"})
SESSIONS = 18
FIRST_DAY = datetime(2026, 2, 2, 9, 0)
SESSION_GAP_DAYS = 15
TURNS_PER_USER = 432


@dataclass(frozen=True, slots=True)
class HardTurn:
    """One exchange: the person's message and the bot's reply, at `when`."""

    id: str
    when: datetime
    user: str
    bot: str
    session: int


@dataclass(frozen=True, slots=True)
class HardQuestion:
    """A question asked at `asked_at`; `match` "all": recall counts the share of `evidence`
    found, "any": one evidence turn is enough."""

    id: str
    user: str
    asked_at: datetime
    text: str
    evidence: tuple[str, ...]
    kind: str
    match: str = "all"


@dataclass(slots=True)
class History:
    user: str
    turns: list[HardTurn] = field(default_factory=list)
    questions: list[HardQuestion] = field(default_factory=list)


# -- the facts: names, places, things ------------------------------------------------------

_WOMEN = ("Priya", "Clara", "Nadia", "Elena", "Grace", "Yuki", "Amara", "Leonie", "Rosa", "Hana",
          "Maeve", "Zofia", "Ingrid", "Beatriz", "Selin", "Mira")
_MEN = ("Tom", "Marco", "Jonas", "Felix", "Omar", "Ravi", "Lukas", "Diego", "Samuel", "Kenji",
        "Pavel", "Theo", "Andre", "Hugo", "Idris", "Niall")
_RELATIONS = ("sister", "brother", "best friend", "coworker", "neighbour", "cousin", "old flatmate",
              "friend from uni", "aunt", "climbing buddy")
_HOBBIES = (
    ("salsa", "the dance studio on Canal Street"), ("pottery", "the community arts centre"),
    ("rock climbing", "the bouldering gym near the station"), ("Italian", "the language school downtown"),
    ("piano", "a teacher two streets away"), ("swimming", "the old public baths"),
    ("boxing", "a gym in the industrial park"), ("watercolour painting", "the library's evening classes"),
    ("chess", "the club above the bakery"), ("tango", "a studio by the river"),
    ("archery", "the sports field out of town"), ("sailing", "the yacht club at the lake"),
    ("judo", "the dojo on Elm Road"), ("cello", "the music conservatory"),
    ("photography", "a weekend workshop"), ("Japanese", "an online course"),
)
_CITIES = ("Lisbon", "Kraków", "Montreal", "Osaka", "Marrakesh", "Edinburgh", "Bologna", "Valparaíso",
           "Tbilisi", "Reykjavik", "Hanoi", "Seville", "Tallinn", "Nairobi", "Porto", "Ljubljana")
_TRIP_REASONS = ("a friend's wedding", "a job interview", "a conference on robotics", "a marathon",
                 "a food festival", "visiting her grandparents", "a climbing trip", "a music festival",
                 "a photography workshop", "a week of hiking", "a cousin's graduation", "a yoga retreat")
_SPECIES = (("dog", "puppy"), ("cat", "kitten"), ("rabbit", "bunny"), ("parrot", "parrot"),
            ("tortoise", "tortoise"), ("hamster", "hamster"))
_PET_NAMES = ("Biscuit", "Pepper", "Mochi", "Ziggy", "Luna", "Waffles", "Juniper", "Noodle", "Pickle",
              "Otis", "Clementine", "Bruno", "Tofu", "Maple", "Kiwi", "Rocket")
_PET_EVENTS = (
    ("ate a whole sock and had to go to the vet", "swallow at the vet", "What did {p}'s {sp} swallow?"),
    ("learned to open the fridge door", "learn", "What trick did {p}'s {sp} learn?"),
    ("got lost for two days and turned up at the fire station", "lost", "Where did {p}'s {sp} turn up when it got lost?"),
    ("won second prize at the county pet show", "prize", "What prize did {p}'s {sp} win?"),
    ("chewed through the charger of my laptop", "chew", "What did {p}'s {sp} chew through?"),
    ("had surgery on a hind leg and is wearing a cone", "surgery", "What surgery did {p}'s {sp} have?"),
)
_JOBS = (
    ("a nurse", "St Mary's hospital"), ("a barista", "the Copper Kettle café"),
    ("a software tester", "a fintech startup"), ("a primary school teacher", "Hillside Primary"),
    ("a paramedic", "the city ambulance service"), ("a sous-chef", "an Italian restaurant"),
    ("a bike mechanic", "the repair shop on Mill Lane"), ("a librarian", "the university library"),
    ("an architect", "a small studio"), ("a physiotherapist", "a sports clinic"),
    ("a tour guide", "a travel agency"), ("a data analyst", "the city council"),
)
_PARTNER_DEEDS = (
    ("cooked us an incredible paella on Saturday", "cook", "What did {p}'s partner cook for us?"),
    ("fixed the leaking tap in my bathroom", "fix", "What did {p}'s partner fix for me?"),
    ("ran the half marathon in under two hours", "run", "What race did {p}'s partner run?"),
    ("sang karaoke at my birthday party", "sing", "What did {p}'s partner do at my birthday party?"),
    ("gave me a lift to the airport at 5 am", "lift", "Where did {p}'s partner drive me?"),
    ("taught me how to make sourdough", "teach", "What did {p}'s partner teach me to make?"),
)
_OBJECTS = (
    ("camera", "Fujifilm X-T30"), ("tent", "two-person Vango tent"), ("drill", "Bosch cordless drill"),
    ("e-reader", "Kobo Clara"), ("bike", "green Brompton"), ("projector", "tiny Anker projector"),
    ("guitar", "Yamaha acoustic guitar"), ("keyboard", "Keychron K8"),
)
_RETURN_STATES = (
    "came back with a big scratch across the screen", "came back with a missing part",
    "came back clean and working, even better than before", "came back soaked after a storm",
    "came back with a dent in the side", "still hasn't come back after three months",
)
_GIFTS = ("a silk scarf", "a record player", "a cookbook about Georgian food", "a pair of hiking boots",
          "a pottery wheel voucher", "a vintage map of her hometown", "noise-cancelling headphones",
          "a bonsai tree", "a board game called Wingspan", "a leather notebook", "tickets to a jazz concert",
          "a chess set carved from walnut")
_HOMES = ("Leeds", "Ghent", "Lyon", "Utrecht", "Aarhus", "Brno", "Graz", "Bilbao", "Turin", "Cork")
_NEW_HOMES = ("Berlin", "Glasgow", "Vienna", "Rotterdam", "Copenhagen", "Prague", "Zurich", "Madrid")
_PERFORMANCES = (
    ("piano recital", "Yes! It was amazing, the last piece made me cry",
     "How did I find {p}'s piano recital?"),
    ("first stand-up comedy gig", "No, I had to work late, so annoying",
     "Did I make it to {p}'s stand-up comedy gig?"),
    ("graduation ceremony", "Sadly not, the trains were cancelled",
     "Did I manage to attend {p}'s graduation ceremony?"),
    ("art exhibition opening", "Yes, and I bought a small print",
     "What did I do at {p}'s art exhibition opening?"),
    ("football final", "They lost 2-1, heartbreaking",
     "How did {p}'s football final end?"),
    ("book launch", "Packed! They sold out of copies",
     "How busy was {p}'s book launch?"),
    ("wedding rehearsal", "Chaotic, the priest forgot the rings",
     "What went wrong at {p}'s wedding rehearsal?"),
    ("choir concert", "Loved it, they did three encores",
     "How many encores did {p}'s choir concert have?"),
    ("marathon", "Yes! Under four hours",
     "Did {p} finish the marathon in good time?"),
    ("job interview", "Got it! Starts next month",
     "What came of {p}'s job interview?"),
    ("driving test", "Failed, nerves got the better of her",
     "How did {p}'s driving test go?"),
    ("surprise party", "Totally fooled, best night of the year",
     "Did {p} suspect the surprise party?"),
)
_ADVICE = (
    ("any idea for dinner? I have leeks, eggs and some cheese",
     "A leek and gruyère quiche: soften the leeks in butter, whisk four eggs with cream, bake 35 minutes at 180 °C.",
     "What quiche recipe did you give me?"),
    ("I need a novel for a long train ride, something gripping",
     "Try 'The Shadow of the Wind' by Carlos Ruiz Zafón: a mystery about a cursed book in Barcelona.",
     "Which Zafón book did you recommend to me?"),
    ("my tomato plants have yellow leaves at the bottom, help",
     "That is usually early blight or a lack of nitrogen: pinch off the yellow leaves and feed with a balanced fertiliser every two weeks.",
     "What did you say was wrong with the tomato leaves?"),
    ("how do I stop my glasses fogging up when I wear a mask",
     "Pinch the mask's wire firmly over your nose, or rub a drop of washing-up liquid on the lenses and buff it off.",
     "What trick against foggy glasses did you suggest?"),
    ("what's a good stretch for a stiff lower back after sitting all day",
     "The cat-cow stretch on hands and knees, ten slow rounds, then child's pose for a minute.",
     "Which stretches did you recommend for my back?"),
    ("suggest a board game for six people who don't like long rules",
     "Codenames: two teams, one-word clues, rules explained in two minutes.",
     "Which party game did you suggest for six people?"),
    ("what should I pack for a weekend of hiking in the rain",
     "A waterproof shell, merino base layer, spare socks in a dry bag, and gaiters for the mud.",
     "What did you tell me to pack for the rainy hike?"),
    ("any podcast about history that isn't boring",
     "'The Rest Is History': two historians, lively episodes on anything from Caligula to the Titanic.",
     "Which history podcast did you recommend?"),
    ("how do I get red wine out of a white carpet",
     "Blot, don't rub; pour cold water, then a paste of baking soda, leave it to dry and vacuum.",
     "What did you say would get the wine stain out?"),
    ("I want to start running, what plan should I follow",
     "Couch to 5K: nine weeks, three runs a week, alternating walking and running intervals.",
     "Which running plan did you suggest to me?"),
    ("cocktail idea for a summer party without much effort",
     "A big jug of Aperol spritz: three parts prosecco, two Aperol, a splash of soda, orange slices.",
     "What cocktail did you suggest for the summer party?"),
    ("what houseplant survives in a dark bathroom",
     "A snake plant or a ZZ plant: both take low light and humidity and forgive forgetting to water.",
     "Which plants did you recommend for the dark bathroom?"),
)
_GIFT_ADVICE = (
    ("keen gardener", "a Japanese hori-hori knife", "What gift did you suggest for {p}?"),
    ("coffee snob", "an Aeropress with a bag of Ethiopian beans", "What present did you recommend for {p}?"),
    ("loves astronomy", "a planisphere and a red torch for stargazing", "What did you suggest I give {p}?"),
    ("just started baking", "a Danish dough whisk and a proofing basket", "Which gift idea did you give me for {p}?"),
)

_FILLER_ASKS = (
    ("what's {a} times {b}", "{a} × {b} = {ab}."),
    ("convert {n} miles to km", "{n} miles is about {km} km."),
    ("how do you say 'good morning' in {lang}", "In {lang} it's the usual morning greeting; want the pronunciation?"),
    ("weather in {city} {day}?", "{city} {day}: around {t} °C, {sky}."),
    ("how do I {task} in python", "You can use {tool}; for example in one line with a comprehension."),
    ("give me a synonym for {word}", "Some options: {syn}."),
    ("what's the capital of {country}", "It's {capital}."),
    ("set a timer idea: how long to boil an egg for a runny yolk", "About six and a half minutes from boiling water."),
    ("ugh, {weekday} again. so tired", "Hang in there! Coffee, a short walk and one small task first."),
    ("is {n} a prime number", "Let me check: {prime}."),
    ("what's a good name for a {thing}", "How about {name}? Short and easy to remember."),
    ("summarise what a {concept} is in one sentence", "A {concept} is {definition}."),
)
_LANGS = ("Spanish", "Japanese", "Swahili", "Polish", "Portuguese", "Korean", "Dutch")
_DAYS = ("today", "tomorrow", "this weekend", "on Friday")
_SKIES = ("cloudy", "sunny spells", "light rain", "windy", "clear")
_TASKS = (("reverse a list", "slicing"), ("read a csv file", "the csv module"), ("sort a dict by value", "sorted()"),
          ("merge two dicts", "the | operator"), ("count words", "collections.Counter"),
          ("parse json", "json.loads"), ("get today's date", "datetime.date.today()"))
_WORDS = (("happy", "glad, cheerful, content"), ("big", "large, huge, vast"), ("fast", "quick, rapid, swift"),
          ("tired", "weary, drained, sleepy"), ("smart", "clever, bright, sharp"))
_CAPITALS = (("Peru", "Lima"), ("Kenya", "Nairobi"), ("Canada", "Ottawa"), ("Vietnam", "Hanoi"),
             ("Norway", "Oslo"), ("Chile", "Santiago"), ("Georgia", "Tbilisi"))
_THINGS = ("wifi network", "sourdough starter", "fantasy football team", "book club", "houseplant")
_CONCEPTS = (("hash table", "a structure that finds values by a computed key"),
             ("mortgage", "a loan secured on a house"), ("black hole", "a region whose gravity lets nothing escape"),
             ("compound interest", "interest earned on earlier interest too"))
_CHATTER = (
    "had lunch with {p} today, nothing special", "{p} says hi by the way", "{p} sent me a funny meme lol",
    "bumped into {p} at the supermarket", "{p} and I watched a film last night, it was fine",
    "going for coffee with {p} later", "{p} is so busy these days", "I owe {p} a phone call",
)
_CHATTER_REPLIES = ("Nice!", "Say hi back from me!", "Sounds like a good day.", "Enjoy!", "Ha, fair enough.")
_SHORT_FILLERS = (("ok thanks", "You're welcome!"), ("lol", "😄"), ("haha nice", "Glad you liked it!"),
                  ("perfect", "Great!"), ("got it", "Anything else?"))


@dataclass(slots=True)
class _Person:
    name: str
    she: str
    her: str
    relation: str


def _person_pool(rng: random.Random) -> list[_Person]:
    women = [_Person(n, "she", "her", "") for n in rng.sample(_WOMEN, 4)]
    men = [_Person(n, "he", "his", "") for n in rng.sample(_MEN, 3)]
    people = women + men
    rng.shuffle(people)
    for person, relation in zip(people, rng.sample(_RELATIONS, len(people)), strict=True):
        if person.she == "he":
            relation = {"sister": "brother", "aunt": "uncle"}.get(relation, relation)
        elif relation == "brother":
            relation = "sister"
        person.relation = relation
    return people


def _filler(rng: random.Random, people: list[_Person]) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(_CHATTER).format(p=rng.choice(people).name), rng.choice(_CHATTER_REPLIES)
    if roll < 0.22:
        return rng.choice(_SHORT_FILLERS)
    ask, reply = rng.choice(_FILLER_ASKS)
    a, b, n = rng.randint(12, 999), rng.randint(2, 99), rng.randint(2, 300)
    task, tool = rng.choice(_TASKS)
    word, syn = rng.choice(_WORDS)
    country, capital = rng.choice(_CAPITALS)
    concept, definition = rng.choice(_CONCEPTS)
    slots = dict(a=a, b=b, ab=a * b, n=n, km=f"{n * 1.609:.1f}", lang=rng.choice(_LANGS),
                 city=rng.choice(_CITIES), day=rng.choice(_DAYS), t=rng.randint(-3, 31),
                 sky=rng.choice(_SKIES), task=task, tool=tool, word=word, syn=syn, country=country,
                 capital=capital, weekday=rng.choice(("monday", "tuesday", "wednesday")),
                 prime="yes, it is" if all(n % d for d in range(2, n)) else "no, it has divisors",
                 thing=rng.choice(_THINGS), name=rng.choice(("Nova", "Pebble", "Orbit", "Fern")),
                 concept=concept, definition=definition)
    return ask.format(**slots), reply.format(**slots)


class _Writer:
    """Collects one user's story beats (ordered groups of exchanges) and their questions."""

    def __init__(self, user: str, rng: random.Random) -> None:
        self.user = user
        self.rng = rng
        self.beats: list[tuple[int, list[tuple[str, str]], list[tuple[int, str, str, str]]]] = []
        self.people = _person_pool(rng)

    def beat(self, session: int, exchanges: list[tuple[str, str]],
             questions: list[tuple[int, str, str, str]] = ()) -> int:
        """`questions`: (exchange index in this beat or -1, text, kind, match); returns the beat id."""
        self.beats.append((session, exchanges, list(questions)))
        return len(self.beats) - 1


def _other(rng: random.Random, people: list[_Person], p: _Person) -> _Person:
    """Someone else than `p`: the subject of a similar-sounding fact."""
    return rng.choice([q for q in people if q is not p])


def _story(user: str, rng: random.Random) -> tuple[_Writer, list[tuple[str, list[tuple[int, int]], str, str]]]:
    """The user's story beats, and questions spanning beats: (text, [(beat, exchange)], kind, match)."""
    w = _Writer(user, rng)
    people = w.people
    spread: list[tuple[str, list[tuple[int, int]], str, str]] = []
    sessions = list(range(SESSIONS))

    def when_ask(p: _Person, thing: str) -> str:
        return rng.choice((f"When did {p.name} {thing}?", f"When was it that {p.name} {thing}?"))

    home, new_home = rng.choice(_HOMES), rng.choice(_NEW_HOMES)
    w.beat(0, [(f"hi! I'm {user.title()}, I live in {home} and I'll probably ask you lots of random stuff",
                f"Hi {user.title()}! Happy to help with anything, {home} or otherwise.")])
    move_session = rng.randint(9, 13)
    moved = w.beat(move_session, [(f"big news: I moved from {home} to {new_home} last weekend, boxes everywhere",
                                   f"Welcome to {new_home}! Unpacking takes a while, do the kitchen first.")],
                   [(0, "Where do I live now?", "update", "all"),
                    (0, f"When did I move to {new_home}?", "when", "all")])
    del moved

    hobbies = rng.sample(_HOBBIES, 6)
    for p, (hobby, place) in zip(people[:6], hobbies, strict=True):
        s = rng.choice(sessions[1:])
        said = rng.choice((f"my {p.relation} {p.name} started {hobby} lessons at {place}, {p.she}'s hooked already",
                           f"{p.name} finally signed up for {hobby} classes at {place}, first one was tonight",
                           f"guess what, {p.name} (my {p.relation}) is doing {hobby} now, at {place}"))
        w.beat(s, [(said, f"That's great! {hobby.capitalize()} is a lovely thing to pick up. Is {p.name} enjoying {place}?")],
               [(0, when_ask(p, f"start {p.her} {hobby} lessons"), "when", "all"),
                (0, f"Where does {p.name} take {hobby} lessons?", "fact", "all")])
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(rng.choice((
            f"{q.name} keeps saying {q.she}'ll try {hobby} lessons one day",
            f"{q.name} quit {hobby} after two lessons, not for {q.her}")), "Fair enough!")])
    for p, city, reason in zip(people[1:7], rng.sample(_CITIES, 6), rng.sample(_TRIP_REASONS, 6), strict=True):
        s = rng.choice(sessions[1:])
        reason = reason.replace("her ", f"{p.her} ")
        said = rng.choice((f"{p.name} just got back from {city}, {p.she} went there for {reason}",
                           f"{p.name} spent the week in {city} for {reason}, lucky thing"))
        w.beat(s, [(said, f"{city} is a beautiful place! I hope {p.name} had a good time.")],
               [(0, when_ask(p, f"go to {city}"), "when", "all"),
                (0, f"Why did {p.name} travel to {city}?", "fact", "all")])
    for p, (species, young), pet, (deed, _, question) in zip(
            people[:3], rng.sample(_SPECIES, 3), rng.sample(_PET_NAMES, 3), rng.sample(_PET_EVENTS, 3),
            strict=True):
        s1 = rng.randint(1, 8)
        s2 = rng.randint(s1 + 2, SESSIONS - 1)
        a = w.beat(s1, [(f"{p.name} adopted a {young} and called it {pet}, I'm so jealous",
                         f"Aww, {pet} is a great name! A {species} is a lot of fun.")],
                   [(0, f"What is the name of {p.name}'s {species}?", "fact", "all"),
                    (0, when_ask(p, f"adopt {p.her} {species}"), "when", "all")])
        b = w.beat(s2, [(f"{pet} {deed}, can you believe it",
                         f"Oh wow, {pet} keeps everyone busy! Send my best.")])
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name} wants a {species} too but {q.her} landlord says no",
                                           "Landlords can be strict about pets.")])
        spread.append((question.format(p=p.name, sp=species), [(a, 0), (b, 0)], "multi", "all"))
    for p, (job, place), (job2, place2) in zip(people[2:6], rng.sample(_JOBS, 4), rng.sample(_JOBS, 4),
                                               strict=True):
        if job == job2:
            continue
        s1 = rng.randint(1, 7)
        s2 = rng.randint(s1 + 3, SESSIONS - 1)
        a = w.beat(s1, [(f"{p.name} got a job as {job} at {place}, {p.she} starts on Monday",
                         f"Congratulations to {p.name}! Working at {place} sounds exciting.")],
                   [(0, when_ask(p, f"get the job at {place}"), "when", "all")])
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name} applied to be {job} at {place} too but didn't get it",
                                           f"That's a shame for {q.name}.")])
        b = w.beat(s2, [(f"{p.name} quit {place}! {p.she}'s {job2} at {place2} now",
                         f"A big change for {p.name}. I hope {place2} treats {p.her} well.")],
                   [(0, f"What does {p.name} do for work now?", "update", "all")])
        spread.append((f"Where did {p.name} work before {place2}?", [(a, 0)], "fact", "all"))
        del b
    for p, partner, (deed, _, question) in zip(
            rng.sample(people, 3), rng.sample([n for n in _WOMEN + _MEN if n not in {q.name for q in people}], 3),
            rng.sample(_PARTNER_DEEDS, 3), strict=True):
        s1 = rng.randint(1, 8)
        s2 = rng.randint(s1 + 2, SESSIONS - 1)
        a = w.beat(s1, [(f"{p.name} has a new partner called {partner}, they met at a climbing wall",
                         f"How lovely for {p.name}! I hope {partner} is as nice as {p.name} says.")],
                   [(0, f"What is the name of {p.name}'s partner?", "fact", "all")])
        b = w.beat(s2, [(f"{partner} {deed}, what a legend", "That's a keeper!")])
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name} is still single, says partners are overrated",
                                           f"Ha, {q.name} sounds content.")])
        spread.append((question.format(p=p.name), [(a, 0), (b, 0)], "multi", "all"))
    for p, (obj, brand), state in zip(rng.sample(people, 3), rng.sample(_OBJECTS, 3),
                                      rng.sample(_RETURN_STATES, 3), strict=True):
        s1 = rng.randint(1, 9)
        s2 = rng.randint(s1 + 1, SESSIONS - 1)
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name} asked to borrow my {obj} too, I said maybe",
                                           "Up to you!")])
        a = w.beat(s1, [(f"I lent my {brand} to {p.name} for a few weeks",
                         f"Generous of you! I hope {p.name} takes good care of the {obj}.")],
                   [(0, f"Who did I lend my {obj} to?", "fact", "all")])
        b = w.beat(s2, [(f"it finally {state}, {p.name} apologised at least",
                         f"At least {p.name} said sorry. Will you lend it again?")])
        spread.append((f"In what state did my {obj} come back from {p.name}?", [(a, 0), (b, 0)], "multi", "all"))
    for p, gift in zip(rng.sample(people, 4), rng.sample(_GIFTS, 4), strict=True):
        s = rng.choice(sessions[1:])
        gift_text = gift.replace("her ", f"{p.her} ")
        w.beat(s, [(f"got {p.name} {gift_text} for {p.her} birthday, fingers crossed",
                    f"That's a thoughtful present, {p.name} will love it.")],
               [(0, f"What did I give {p.name} for {p.her} birthday?", "fact", "all")])
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name}'s birthday is coming up too, no idea what to get {q.her}",
                                           f"I can help brainstorm for {q.name}!")])
    for p, (event, reply, question) in zip(people + people, rng.sample(_PERFORMANCES, 10), strict=False):
        s = rng.choice(sessions[1:])
        reply = reply.replace(" her", f" {p.her}")
        q = _other(rng, people, p)
        w.beat(rng.choice(sessions[1:]), [(f"{q.name} has a {event} of {q.her} own next month", "Busy times!")])
        w.beat(s, [(f"tonight is {p.name}'s {event}",
                    f"Exciting! Are you going to {p.name}'s {event}? Tell me how it goes."),
                   (reply, "Thanks for telling me!")],
               [(1, question.format(p=p.name), "short", "all")])
    for ask, answer, question in rng.sample(_ADVICE, 9):
        s = rng.choice(sessions[1:])
        w.beat(s, [(ask, answer)], [(0, question, "bot", "all")])
    for p, (likes, gift, question) in zip(rng.sample(people, 3), rng.sample(_GIFT_ADVICE, 3), strict=True):
        s = rng.choice(sessions[1:])
        w.beat(s, [(f"what should I get {p.name}? {p.she}'s a {likes}",
                    f"For a {likes}, {gift} would be a great pick for {p.name}.")],
               [(0, question.format(p=p.name), "bot", "all")])
    return w, spread


def _session_days(rng: random.Random) -> list[datetime]:
    days = []
    for s in range(SESSIONS):
        jitter = timedelta(days=rng.randint(-4, 4), hours=rng.randint(0, 10), minutes=rng.randint(0, 59))
        days.append(FIRST_DAY + timedelta(days=s * SESSION_GAP_DAYS) + jitter)
    return days


def _history(user: str) -> History:
    rng = random.Random(f"{SEED}:{user}")
    writer, spread = _story(user, rng)
    days = _session_days(rng)
    by_session: dict[int, list[int]] = {}
    for n, (session, _, _) in enumerate(writer.beats):
        by_session.setdefault(session, []).append(n)
    beat_turns: dict[tuple[int, int], str] = {}
    history = History(user)
    story_turns = sum(len(ex) for _, ex, _ in writer.beats)
    fillers_left = TURNS_PER_USER - story_turns
    for session in range(SESSIONS):
        beats = by_session.get(session, [])
        fillers = fillers_left // (SESSIONS - session)
        fillers_left -= fillers
        # beats keep their exchanges together; fillers go before, between and after them
        slots: list[int | None] = [None] * fillers + beats
        rng.shuffle(slots)
        when = days[session]
        count = 0
        for slot in slots:
            exchanges = [_filler(rng, writer.people)] if slot is None else writer.beats[slot][1]
            for index, (said, reply) in enumerate(exchanges):
                count += 1
                when += timedelta(minutes=rng.randint(1, 6))
                turn_id = f"{user}-s{session + 1:02d}-{count:03d}"
                history.turns.append(HardTurn(turn_id, when, said, reply, session))
                if slot is not None:
                    beat_turns[(slot, index)] = turn_id
    end = history.turns[-1].when
    n = 0

    def ask(text: str, evidence: tuple[str, ...], kind: str, match: str, at: datetime) -> None:
        nonlocal n
        n += 1
        history.questions.append(HardQuestion(f"h-{user}-{n:03d}", user, at, text, evidence, kind, match))

    for slot, (_, _, questions) in enumerate(writer.beats):
        for index, text, kind, match in questions:
            ask(text, (beat_turns[(slot, index)],), kind, match, end + timedelta(days=rng.randint(1, 20)))
    for text, parts, kind, match in spread:
        ask(text, tuple(beat_turns[p] for p in parts), kind, match, end + timedelta(days=rng.randint(1, 20)))
    for p in writer.people:
        naming = [t for t in history.turns if p.name in t.user]
        if not naming:
            continue
        target = rng.choice(naming)
        monday = (target.when - timedelta(days=target.when.weekday())).replace(hour=0, minute=0)
        at = monday + timedelta(days=7 + rng.randint(0, 4), hours=rng.randint(9, 20))
        window = tuple(t.id for t in naming if monday <= t.when < monday + timedelta(days=7))
        ask(f"What did I tell you about {p.name} last week?", window, "window", "any", at)
    history.questions.sort(key=lambda q: (q.asked_at, q.id))
    return history


def build() -> list[History]:
    """Every user's history and questions; the same on every call (seeded)."""
    return [_history(user) for user in USERS]
