"""Server documents and questions for bench/docs_eval.py: five Markdown documents written for
this project (a community's rules and FAQ, a game's raid guide, course notes, a club's
handbook; every name, date and figure in them is invented), and questions whose answer lies
in one known section. Half the questions reword the section (few shared words: meaning must
carry them), half name its particulars (numbers, names: words must carry them). Documents
share topics on purpose (times, roles, bans, fees), so that a passage of the wrong document
competes."""

from __future__ import annotations

import numpy as np

RULES = """# Server rules

## 1. Respect every member
Treat everyone with courtesy. Personal attacks, slurs, and harassment of any kind are removed on sight,
and repeated cases lead to a ban.

## 2. Keep channels on topic
Each channel has a purpose written in its description. Off-topic chatter belongs in #lounge; game
questions go to #help-desk.

## 3. No advertising
Promoting other Discord servers, streams, shops or referral links is forbidden, in channels and in
direct messages to members. Partnered communities are listed in #partners instead.

## 4. Names and avatars
Nicknames must be readable and mentionable. Avatars with gore or sexual content will be reset by a
moderator, and the member is asked to change it within 24 hours.

## 5. Spoilers
Story spoilers for releases younger than two weeks must be wrapped in spoiler tags and may only be
posted in #spoilers.

## 6. Voice etiquette
Push-to-talk is expected in the public voice rooms. Music bots are allowed only in the Jukebox room,
and soundboards are not allowed at all.

## 7. Warnings and bans
Moderators give a written warning first. A third warning within 90 days means a seven-day timeout;
the next offence after that means a permanent ban.

## 8. Appeals
A banned member may appeal once, through the form linked in the ban message. Appeals are read by two
moderators who were not involved, and the answer comes within 14 days.
"""

FAQ = """# Community FAQ

## How do I get a role?
Roles are self-assigned in #roles by reacting to the pinned message. The Veteran role is given by
hand to members active for a full year.

## When are events held?
Community game nights run every Friday at 19:00 UTC. Tournaments are announced in #events at least
ten days ahead.

## How do I report someone?
Use the /report command or message the ModMail bot. Reports are private; the reported member is not
told who filed it.

## Can I become a moderator?
Moderator applications open twice a year, in March and September. Applicants need to be members for
at least six months with no warnings on record.

## What is the bot for?
The assistant bot answers questions in any channel when mentioned, and can summarise a channel with
/tldr. It does not read direct messages unless you write to it first.

## Is there a server store?
No. Nothing in this community is sold. Donations go to the server's hosting costs through the
Patreon link in #about, and donors get a cosmetic badge only.

## How do I change my timezone?
Run /timezone with your city. Event reminders will then show times in your own local time.

## Where do I suggest features?
Post ideas in #suggestions using the template. The ten most upvoted each month are discussed in the
monthly staff meeting.
"""

RAID = """# Raid guide: The Sunken Citadel

## Entry requirements
Groups of eight players at item level 450 or higher can enter. The attunement quest "Salt and Stone"
must be finished by every member.

## First boss: Warden Ysolde
Ysolde summons tidal adds every 45 seconds. Tanks swap when her Brine Crush stacks reach four.
Healers should save cooldowns for the Undertow phase at 30 percent health.

## Second boss: The Drowned Choir
Three singers share one health pool. Interrupt the one casting Dirge, or the whole raid is silenced
for eight seconds. Kill order does not matter.

## Third boss: Leviathan Kaarn
The floor floods in stages. Stand on the coral platforms when the water rises, and hit the glowing
eye during Exposed Core for triple damage.

## Loot rules
Loot is distributed by need before greed. Each player may win one weapon per week. Mounts drop from
Kaarn only, with a one percent chance.

## Consumables
Bring resistance potions against frost, and a stack of feasts for the group. The citadel vendor
sells breathing tonics for 20 gold each.

## Weekly lockout
The raid resets on Wednesday at 04:00 server time. Saved characters cannot loot bosses again until
the reset.

## Common wipes
Most failed attempts come from ignoring the Dirge interrupt or from standing in the flood on Kaarn.
Assign an interrupt rotation before every pull.
"""

ASTRONOMY = """# Course notes: Introduction to Astronomy

## Week 1: The sky at night
Stars appear to turn around the celestial pole once a day because the Earth rotates. Constellations
are only patterns; their stars are usually at very different distances.

## Week 2: Phases of the Moon
The Moon shows phases because we see different fractions of its sunlit half as it orbits. A full
cycle from new moon to new moon takes about 29.5 days.

## Week 3: Seasons
Seasons are caused by the tilt of the Earth's axis, about 23.4 degrees, not by the distance to the
Sun. Summer in one hemisphere is winter in the other.

## Week 4: Light and telescopes
A telescope's light-gathering power grows with the area of its main mirror or lens. Doubling the
diameter collects four times as much light.

## Week 5: The life of stars
Stars fuse hydrogen into helium in their cores. Massive stars burn out in a few million years and may
end as supernovae; small red dwarfs last for trillions of years.

## Week 6: Galaxies
The Milky Way is a barred spiral galaxy about 100,000 light years across. The nearest large
neighbour, Andromeda, is about 2.5 million light years away.

## Assessment
The course grade is 40 percent lab reports, 20 percent quizzes and 40 percent the final exam. The
final exam is on June 12 in room B204.

## Observing sessions
The rooftop observatory opens on clear Tuesday evenings from 21:00. Bring warm clothes; red torches
only, since white light ruins night vision.
"""

HANDBOOK = """# Bakery club handbook

## Membership
Membership costs 15 euros per term and covers flour, sugar and the use of the ovens. Guests may join
one session for free before deciding.

## Kitchen safety
Tie long hair back and wear closed shoes. Burns are treated with cool running water for twenty
minutes; the first-aid box hangs next to the door.

## Sourdough starter
The club starter is fed every Monday and Thursday with equal weights of rye flour and water. Members
may take 50 grams home in a clean jar.

## Oven booking
The two deck ovens are booked through the shared calendar. A slot lasts 90 minutes, and an unused
booking is released after 15 minutes.

## Allergies
Every bake that contains nuts, sesame or gluten must carry a label on the tray. Nut-free bakes are
prepared on the green bench only.

## Competitions
The spring bake-off takes place in April. Entries are judged blind by three members on taste, crumb
and appearance.

## Cleaning duty
Whoever bakes last cleans the benches and sweeps the floor. Trays go back on the rack washed and
dried, never wet.

## Leaving the club
Tell the treasurer before the term ends to stop your membership. Fees already paid are not refunded.
"""

DOCUMENTS: list[tuple[str, str]] = [
    ("Server rules", RULES),
    ("Community FAQ", FAQ),
    ("Raid guide", RAID),
    ("Astronomy notes", ASTRONOMY),
    ("Bakery club handbook", HANDBOOK),
]

# (question, document title, section heading path as the passages name it)
QUESTIONS: list[tuple[str, str, str]] = [
    ("What happens if someone insults another member?", "Server rules", "Server rules > 1. Respect every member"),
    ("Where should off-topic chatter go?", "Server rules", "Server rules > 2. Keep channels on topic"),
    ("Can I tell people about my Twitch channel in DMs?", "Server rules", "Server rules > 3. No advertising"),
    ("Is it ok to post a link to another community I run?", "Server rules", "Server rules > 3. No advertising"),
    ("My profile picture got reset by staff, why?", "Server rules", "Server rules > 4. Names and avatars"),
    ("Where can I discuss the ending of a game that came out last week?", "Server rules",
     "Server rules > 5. Spoilers"),
    ("Are soundboards allowed in voice?", "Server rules", "Server rules > 6. Voice etiquette"),
    ("Which room can music bots play in?", "Server rules", "Server rules > 6. Voice etiquette"),
    ("How many warnings before I get a timeout?", "Server rules", "Server rules > 7. Warnings and bans"),
    ("What comes after a seven-day timeout?", "Server rules", "Server rules > 7. Warnings and bans"),
    ("I was banned unfairly, what can I do?", "Server rules", "Server rules > 8. Appeals"),
    ("How long does it take to hear back about an appeal?", "Server rules", "Server rules > 8. Appeals"),
    ("How do I pick up a role for myself?", "Community FAQ", "Community FAQ > How do I get a role?"),
    ("Who gets the Veteran role?", "Community FAQ", "Community FAQ > How do I get a role?"),
    ("What day is game night?", "Community FAQ", "Community FAQ > When are events held?"),
    ("How early are tournaments announced?", "Community FAQ", "Community FAQ > When are events held?"),
    ("Will the person I complain about find out it was me?", "Community FAQ", "Community FAQ > How do I report someone?"),
    ("What does ModMail do?", "Community FAQ", "Community FAQ > How do I report someone?"),
    ("When can I apply to join the staff team?", "Community FAQ", "Community FAQ > Can I become a moderator?"),
    ("How long must I be a member before applying as moderator?", "Community FAQ",
     "Community FAQ > Can I become a moderator?"),
    ("Does the assistant read my private messages?", "Community FAQ", "Community FAQ > What is the bot for?"),
    ("Which command sums up a channel?", "Community FAQ", "Community FAQ > What is the bot for?"),
    ("Can I buy merch from the community?", "Community FAQ", "Community FAQ > Is there a server store?"),
    ("What do Patreon donors receive?", "Community FAQ", "Community FAQ > Is there a server store?"),
    ("Event times show in the wrong hour for me, how do I fix it?", "Community FAQ",
     "Community FAQ > How do I change my timezone?"),
    ("What does the /timezone command need?", "Community FAQ", "Community FAQ > How do I change my timezone?"),
    ("I have an idea to improve the server, where do I post it?", "Community FAQ",
     "Community FAQ > Where do I suggest features?"),
    ("How many suggestions are discussed at the staff meeting?", "Community FAQ",
     "Community FAQ > Where do I suggest features?"),
    ("What gear level do we need to get into the citadel?", "Raid guide", "Raid guide: The Sunken Citadel > Entry requirements"),
    ("Which quest unlocks the Sunken Citadel?", "Raid guide", "Raid guide: The Sunken Citadel > Entry requirements"),
    ("When should the tanks switch on the first boss?", "Raid guide",
     "Raid guide: The Sunken Citadel > First boss: Warden Ysolde"),
    ("How often does Ysolde call in adds?", "Raid guide", "Raid guide: The Sunken Citadel > First boss: Warden Ysolde"),
    ("What happens if nobody stops the singer's spell?", "Raid guide",
     "Raid guide: The Sunken Citadel > Second boss: The Drowned Choir"),
    ("Does the order we kill the Choir in matter?", "Raid guide",
     "Raid guide: The Sunken Citadel > Second boss: The Drowned Choir"),
    ("Where should we stand when the room fills with water?", "Raid guide",
     "Raid guide: The Sunken Citadel > Third boss: Leviathan Kaarn"),
    ("When does the eye take extra damage?", "Raid guide", "Raid guide: The Sunken Citadel > Third boss: Leviathan Kaarn"),
    ("How many weapons can I win each week?", "Raid guide", "Raid guide: The Sunken Citadel > Loot rules"),
    ("Which boss can drop a mount?", "Raid guide", "Raid guide: The Sunken Citadel > Loot rules"),
    ("What should I pack before the raid?", "Raid guide", "Raid guide: The Sunken Citadel > Consumables"),
    ("How much do breathing tonics cost?", "Raid guide", "Raid guide: The Sunken Citadel > Consumables"),
    ("When can my character loot the bosses again?", "Raid guide", "Raid guide: The Sunken Citadel > Weekly lockout"),
    ("What time is the Wednesday reset?", "Raid guide", "Raid guide: The Sunken Citadel > Weekly lockout"),
    ("Why do groups usually fail this raid?", "Raid guide", "Raid guide: The Sunken Citadel > Common wipes"),
    ("Should we plan an interrupt rotation?", "Raid guide", "Raid guide: The Sunken Citadel > Common wipes"),
    ("Why do the stars seem to circle around one point?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 1: The sky at night"),
    ("Are the stars of a constellation close to each other?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 1: The sky at night"),
    ("Why does the Moon change shape during the month?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 2: Phases of the Moon"),
    ("How many days from one new moon to the next?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 2: Phases of the Moon"),
    ("Is it warmer in summer because we are closer to the Sun?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 3: Seasons"),
    ("How large is the tilt of the Earth's axis?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 3: Seasons"),
    ("If I buy a telescope twice as wide, how much more light do I get?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 4: Light and telescopes"),
    ("What sets how much light a telescope collects?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 4: Light and telescopes"),
    ("How long do the smallest stars live?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 5: The life of stars"),
    ("What element do stars turn hydrogen into?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 5: The life of stars"),
    ("How far away is the closest big galaxy?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Week 6: Galaxies"),
    ("What shape is the Milky Way?", "Astronomy notes", "Course notes: Introduction to Astronomy > Week 6: Galaxies"),
    ("How much does the final count towards my grade?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Assessment"),
    ("In which room is the final exam?", "Astronomy notes", "Course notes: Introduction to Astronomy > Assessment"),
    ("When can I use the rooftop telescope?", "Astronomy notes",
     "Course notes: Introduction to Astronomy > Observing sessions"),
    ("Why only red torches on the roof?", "Astronomy notes", "Course notes: Introduction to Astronomy > Observing sessions"),
    ("How much is the club fee?", "Bakery club handbook", "Bakery club handbook > Membership"),
    ("Can a friend try a session before paying?", "Bakery club handbook", "Bakery club handbook > Membership"),
    ("What do I do if I burn my hand on a tray?", "Bakery club handbook", "Bakery club handbook > Kitchen safety"),
    ("Where is the first-aid box?", "Bakery club handbook", "Bakery club handbook > Kitchen safety"),
    ("Which days is the starter fed?", "Bakery club handbook", "Bakery club handbook > Sourdough starter"),
    ("Can I bring some of the mother dough home?", "Bakery club handbook", "Bakery club handbook > Sourdough starter"),
    ("How long can I reserve an oven for?", "Bakery club handbook", "Bakery club handbook > Oven booking"),
    ("What happens if I do not show up for my oven slot?", "Bakery club handbook", "Bakery club handbook > Oven booking"),
    ("Where do I make something for a friend who cannot eat peanuts?", "Bakery club handbook",
     "Bakery club handbook > Allergies"),
    ("Which bakes need a label?", "Bakery club handbook", "Bakery club handbook > Allergies"),
    ("When is the spring bake-off?", "Bakery club handbook", "Bakery club handbook > Competitions"),
    ("Do the judges know whose cake they are tasting?", "Bakery club handbook", "Bakery club handbook > Competitions"),
    ("Who has to tidy up at the end?", "Bakery club handbook", "Bakery club handbook > Cleaning duty"),
    ("Can I put trays away wet?", "Bakery club handbook", "Bakery club handbook > Cleaning duty"),
    ("Do I get my money back if I quit mid-term?", "Bakery club handbook", "Bakery club handbook > Leaving the club"),
    ("Whom do I tell that I am leaving the club?", "Bakery club handbook", "Bakery club handbook > Leaving the club"),
]

# Distractors: documents of other clubs and games, made from templates with a fixed seed, on
# the same subjects (times, fees, roles, warnings, bosses, rooms), so that the right passage
# competes with many that share its words.
_PLACES = ["Harbor Lodge", "Maple Hall", "the Annex", "Studio 3", "the Boathouse", "Room C12", "the Loft"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_CLUBS = ["Chess circle", "Rowing team", "Film society", "Choir", "Climbing group", "Pottery guild",
          "Robotics lab", "Hiking club", "Book circle", "Esports squad"]
_TOPICS = [
    ("Meetings", "{club} meets every {day} at {hour}:00 in {place}. Newcomers should arrive ten minutes early."),
    ("Fees", "The {club} fee is {fee} euros per term, paid to the treasurer; it covers {thing}."),
    ("Roles", "Members of the {club} get the {role} role after {n} sessions; the {role2} role is given by the "
              "captain."),
    ("Warnings", "In the {club}, a member who misses {n} sessions without notice gets a warning; a second "
                 "warning means a break of {weeks} weeks."),
    ("Equipment", "The {club} lends {thing} to members; return it to {place} by {day} evening."),
    ("Events", "The {club} holds its yearly {event} in {month}; sign-ups close {n} days before."),
    ("Safety", "During {club} sessions, report any injury to the captain and fill in the form kept in {place}."),
    ("Leaving", "To leave the {club}, tell the secretary; fees for the current term are {refund}."),
    ("Online", "The {club} posts its schedule in the #{channel} channel and answers questions there on {day}s."),
    ("Boss notes", "In the {club} dungeon run, the boss {boss} summons adds every {n} seconds; tanks swap at "
                   "{m} stacks."),
]


def distractor_documents(seed: int = 7) -> list[tuple[str, str]]:
    """Ten documents of about ten sections each, in Markdown, on the shared subjects."""
    rng = np.random.default_rng(seed)

    def pick(options: list[str]) -> str:
        return str(options[int(rng.integers(len(options)))])

    docs = []
    for club in _CLUBS:
        sections = []
        for topic, template in _TOPICS:
            text = template.format(
                club=club, day=pick(_DAYS), hour=int(rng.integers(8, 22)), place=pick(_PLACES),
                fee=int(rng.integers(5, 60)), thing=pick(["boards and clocks", "boats", "tickets", "sheet music",
                                                          "ropes and harnesses", "clay and glazes", "kits"]),
                role=pick(["Regular", "Member", "Crew", "Veteran"]), role2=pick(["Captain", "Coach", "Lead"]),
                n=int(rng.integers(2, 15)), weeks=int(rng.integers(1, 6)), month=pick(["March", "June", "October"]),
                event=pick(["tournament", "regatta", "festival", "concert", "trip"]),
                refund=pick(["not refunded", "refunded in half", "refunded in full"]),
                channel=pick(["announcements", "schedule", "general"]),
                boss=pick(["Grimwald", "the Ash Queen", "Moloch"]), m=int(rng.integers(2, 6)))
            sections.append(f"## {topic}\n{text}\n")
        docs.append((f"{club} notes", f"# {club} notes\n\n" + "\n".join(sections)))
    return docs
