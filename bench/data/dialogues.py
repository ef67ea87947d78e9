"""Multi-session Discord dialogues of six users with the bot, for the retrieval evaluation.

Written by hand for `bench/retrieval_eval.py`. Each user's sessions are lists of exchanges
`(turn_id, "YYYY-MM-DD HH:MM" UTC, user message, bot reply)`. The people tell the bot facts
about themselves, their plans and worries; facts change over time (moves, new gear, new
numbers); keywords repeat across unrelated turns. `GENERIC` holds everyday requests
(maths, trivia, code, recipes) that are mixed into every user's history as distractors by
`filler_turns`. Questions are in `questions.py`.

Pure data: imports nothing from the project.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

Turn = tuple[str, str, str, str]

SESSIONS: dict[str, list[list[Turn]]] = {
    "ana": [
        [
            ("ana-01-1", "2026-09-02 19:10", "hey! I'm Ana, backend dev living in Lyon. can you help me with some python later?",
             "Hi Ana! Of course, ask away whenever you're ready."),
            ("ana-01-2", "2026-09-02 19:12", "how do I reverse a list in python without modifying it",
             "Use slicing: `reversed_copy = my_list[::-1]`, or `list(reversed(my_list))`. Both leave the original untouched."),
            ("ana-01-3", "2026-09-02 19:20", "thanks. btw my cat Miso knocked my coffee onto the keyboard this morning lol",
             "Oh no! I hope Miso is fine. Unplug the keyboard and let it dry upside down before trying it again."),
            ("ana-01-4", "2026-09-02 19:31", "the keyboard is dead. it was a Keychron K2, I loved that thing",
             "Sorry to hear that. If you liked the K2, the K2 Pro or the Q-series are good replacements."),
            ("ana-01-5", "2026-09-02 19:40", "what's 149 euros minus 20 percent",
             "149 € minus 20% is 119.20 €."),
        ],
        [
            ("ana-02-1", "2026-09-05 10:30", "I got a job offer from a startup in Berlin!! they make logistics software",
             "Congratulations, that's big news! Are you leaning towards accepting?"),
            ("ana-02-2", "2026-09-05 10:34", "yes probably, but I'm nervous about leaving Lyon, all my friends are here",
             "That's a very normal feeling. A big move is both exciting and scary; you can keep those friendships going and visit."),
            ("ana-02-3", "2026-09-05 10:38", "also I'd have to learn German, I only know like danke and bitte",
             "Plenty of people start from zero. A course plus daily practice gets you to everyday German within a year."),
            ("ana-02-4", "2026-09-05 10:41", "what's the weather like in Berlin in October usually?",
             "Cool and often grey: around 8-14 °C in the day, with rain on about a third of the days."),
            ("ana-02-5", "2026-09-05 10:43", "ugh. Lyon is so much sunnier",
             "It is! Berlin makes up for it with lots of indoor culture in the dark months."),
        ],
        [
            ("ana-03-1", "2026-09-09 21:00", "I accepted the Berlin offer. start date is October 1st",
             "Great, congratulations! That leaves about three weeks to organise the move."),
            ("ana-03-2", "2026-09-09 21:05", "I need to find a flat there, my budget is max 1100 euros warm",
             "With 1100 € warm you can find a one or two room flat in many districts, but start early: the market is tight."),
            ("ana-03-3", "2026-09-09 21:07", "remind me what warm rent means in germany, I always forget",
             "Warmmiete includes heating and building service costs; Kaltmiete is the bare rent without them."),
            ("ana-03-4", "2026-09-09 21:15", "I'm cancelling my Basic-Fit gym membership here, they want 2 months notice ugh",
             "Annoying. Send the cancellation by registered letter so you have proof of the date."),
            ("ana-03-5", "2026-09-09 21:20", "I'm taking the TGV and then the ICE with Miso in a carrier, 9 hours total",
             "That's long for a cat. Bring a puppy pad in the carrier, a little water, and keep her in the carrier the whole trip."),
        ],
        [
            ("ana-04-1", "2026-09-14 08:15", "started Duolingo German today. 15 minutes a day is the plan",
             "Nice! Consistency beats intensity; 15 minutes daily is a good habit to build."),
            ("ana-04-2", "2026-09-14 08:18", "quick: difference between der die das?",
             "They are the masculine, feminine and neuter forms of 'the'. Learn each noun together with its article."),
            ("ana-04-3", "2026-09-14 08:22", "I'm worried my German won't be good enough for the Anmeldung appointment",
             "Most Bürgerämter deal with newcomers every day. Bring the filled form and your Wohnungsgeberbestätigung and it will be fine."),
            ("ana-04-4", "2026-09-14 08:30", "my sister Clara is getting married next June in Porto and I'm the maid of honour",
             "How lovely, congratulations to Clara! Porto in June will be beautiful."),
            ("ana-04-5", "2026-09-14 08:33", "she wants me to give a speech and I am terrified of public speaking",
             "Keep it short, tell one story, and practise it out loud a few times. Nobody expects a professional."),
        ],
        [
            ("ana-05-1", "2026-09-22 18:40", "found a flat!! Neukölln, 2 rooms, 1050 warm, I can move in on the 28th",
             "Fantastic! That's under your budget, too."),
            ("ana-05-2", "2026-09-22 18:44", "the landlord wants a Schufa, how do I get one as a foreigner",
             "You can request a free data copy from schufa.de; without German credit history, your employment contract and bank statements usually help."),
            ("ana-05-3", "2026-09-22 18:50", "I'm selling my old desk on Leboncoin for 60 euros",
             "Good idea, furniture is a pain to move. Measure it and add photos in daylight."),
            ("ana-05-4", "2026-09-22 19:02", "my back hurts from packing boxes all weekend",
             "Lift with your legs and take breaks. A warm shower and some stretching should help."),
        ],
        [
            ("ana-06-1", "2026-10-03 11:00", "I moved from Lyon to Berlin! first weekend in the new flat",
             "Welcome to Berlin! How does the new place feel?"),
            ("ana-06-2", "2026-10-03 11:04", "Miso hid under the bed for two days but she's exploring now",
             "That's typical for cats after a move. Give her time and a quiet corner; she'll settle."),
            ("ana-06-3", "2026-10-03 11:09", "the internet won't be installed until October 20, I'm living on my phone hotspot",
             "Painful. Check whether your contract has a free hotspot data boost until the line is active."),
            ("ana-06-4", "2026-10-03 11:15", "any good vegetarian places in Neukölln? I'm vegetarian btw",
             "Try Café Botanico, the falafel places on Sonnenallee, or Lucky Leek across town in Prenzlauer Berg."),
        ],
        [
            ("ana-07-1", "2026-10-08 20:30", "first week at the new job done. my team lead is called Jonas, he's really nice",
             "Congrats on surviving week one! A kind lead makes a big difference."),
            ("ana-07-2", "2026-10-08 20:33", "they use Go and Kafka, I only know Python so I feel a bit lost",
             "Go is small and Python people pick it up quickly. Kafka concepts carry over from any queue you've used."),
            ("ana-07-3", "2026-10-08 20:36", "how do I declare a map in Go",
             "`m := make(map[string]int)` or a literal: `m := map[string]int{\"a\": 1}`."),
            ("ana-07-4", "2026-10-08 20:45", "I joined a bouldering gym near Hermannplatz, 49 euros a month",
             "Bouldering is a great way to meet people in a new city, too."),
            ("ana-07-5", "2026-10-08 20:47", "going tuesdays and thursdays after work",
             "A good rhythm: twice a week gives your fingers time to recover."),
        ],
        [
            ("ana-08-1", "2026-10-15 22:10", "can't sleep. the on-call rotation starts next week and I'm anxious about getting paged at night",
             "That's a common fear. Ask Jonas for the runbooks now, and remember the first rotation usually has a backup person."),
            ("ana-08-2", "2026-10-15 22:14", "what's a good way to calm down before bed",
             "Try box breathing: in for 4, hold 4, out 4, hold 4, for a few minutes; and put the phone away."),
            ("ana-08-3", "2026-10-15 22:20", "also my Anmeldung appointment is on October 27 at the Bürgeramt Neukölln",
             "Noted. Bring your passport, the form and the landlord's confirmation."),
            ("ana-08-4", "2026-10-15 22:25", "and I hurt my finger bouldering on tuesday, nothing serious",
             "Tape it and skip crimpy holds for a week or two so the pulley can heal."),
        ],
        [
            ("ana-09-1", "2026-10-23 13:00", "bought a new keyboard finally, a Keychron Q1 with brown switches",
             "Nice upgrade! The Q1 is much heavier and quieter than the K2."),
            ("ana-09-2", "2026-10-23 13:05", "I'll build Clara's speech around our road trip to Sicily in 2019",
             "A shared story is the perfect backbone for a wedding speech."),
            ("ana-09-3", "2026-10-23 13:08", "how do you say nice to meet you in german",
             "\"Freut mich, dich kennenzulernen\" (informal) or \"Freut mich, Sie kennenzulernen\" (formal)."),
            ("ana-09-4", "2026-10-23 13:12", "my German class at the Volkshochschule starts November 3, mondays and wednesdays in the evening",
             "A real class will speed things up a lot alongside Duolingo."),
        ],
        [
            ("ana-10-1", "2026-10-28 19:00", "the Anmeldung went fine yesterday!! the clerk even spoke slowly for me",
             "Wonderful, one big piece of bureaucracy done!"),
            ("ana-10-2", "2026-10-28 19:03", "the first on-call week was fine, I only got paged once at 3am",
             "That's a gentle start. Well done."),
            ("ana-10-3", "2026-10-28 19:06", "thinking of adopting a second cat so Miso has company",
             "Two cats often keep each other busy; introduce them slowly, over a week or two."),
        ],
    ],
    "raj": [
        [
            ("raj-01-1", "2026-09-03 23:40", "can't sleep, my experiment failed again. third time the western blot shows nothing",
             "That's frustrating. Have you checked the transfer with a Ponceau stain?"),
            ("raj-01-2", "2026-09-03 23:44", "yeah. I'm a 3rd year PhD student in molecular biology at Edinburgh btw",
             "Third year is often the hardest stretch. Happy to think through protocols with you."),
            ("raj-01-3", "2026-09-03 23:50", "my supervisor Dr Okafor wants results before the committee meeting on October 14",
             "That gives you about six weeks. Maybe plan two more attempts with one change each."),
            ("raj-01-4", "2026-09-03 23:55", "what's 0.5 M in mM",
             "0.5 M is 500 mM."),
        ],
        [
            ("raj-02-1", "2026-09-06 09:00", "signed up for the Edinburgh marathon next May! first full marathon ever",
             "Brilliant! That gives you a good eight months to build up."),
            ("raj-02-2", "2026-09-06 09:03", "the longest I've ever run is 21 km, a half marathon last spring",
             "A solid base. Most plans build the long run to about 32 km."),
            ("raj-02-3", "2026-09-06 09:06", "can you make me a 4 day a week running plan",
             "Sure: Tuesday easy 6 km, Thursday intervals, Saturday easy 5 km, Sunday long run growing by 1-2 km a week."),
            ("raj-02-4", "2026-09-06 09:10", "I can't run on wednesdays, lab meeting always runs late",
             "The plan above leaves Wednesday free, so it fits."),
        ],
        [
            ("raj-03-1", "2026-09-12 14:20", "I'm vegetarian but not vegan, I eat eggs and cheese",
             "Got it, that makes protein much easier."),
            ("raj-03-2", "2026-09-12 14:22", "and I'm seriously allergic to peanuts, I carry an epipen",
             "Thanks for telling me; I'll keep peanuts out of any food ideas."),
            ("raj-03-3", "2026-09-12 14:25", "give me a high protein dinner idea without meat",
             "Lentil dal with paneer and spinach, or a chickpea and egg shakshuka."),
            ("raj-03-4", "2026-09-12 14:29", "paneer is good yes. my mum makes the best palak paneer",
             "Maybe ask her for the recipe next time you talk!"),
        ],
        [
            ("raj-04-1", "2026-09-19 17:00", "I'm learning guitar, currently stuck on the F barre chord",
             "Everyone gets stuck on F. Try the small F first (four strings), then add the barre later."),
            ("raj-04-2", "2026-09-19 17:04", "it's a Yamaha FG800, got it second hand for 120 pounds",
             "Great value for a solid beginner acoustic."),
            ("raj-04-3", "2026-09-19 17:07", "what's an easy song with only open chords",
             "Knockin' on Heaven's Door (G, D, Am, C) or Horse with No Name (two chords)."),
            ("raj-04-4", "2026-09-19 17:12", "my sister Priya plays piano, we want to play something together at Diwali",
             "Lovely idea. A simple song in G works well for guitar and piano together."),
        ],
        [
            ("raj-05-1", "2026-09-29 22:00", "the western blot finally worked!! switched the blocking buffer to BSA instead of milk",
             "Yes! Milk can mask phospho-epitopes; good call."),
            ("raj-05-2", "2026-09-29 22:03", "Okafor was happy for once",
             "A rare and precious event. Enjoy it."),
            ("raj-05-3", "2026-09-29 22:10", "my car broke down on the A720 though, the clutch is gone. garage says 900 pounds",
             "Ouch, bad timing. Ask whether the flywheel needs replacing too before they start."),
            ("raj-05-4", "2026-09-29 22:14", "I'll cycle to the lab for now, it's 8 km",
             "Good training on top of the running plan, too."),
        ],
        [
            ("raj-06-1", "2026-10-07 07:30", "ran 25 km on sunday, new longest run! left knee felt a bit sore after",
             "Huge milestone! Keep an eye on the knee."),
            ("raj-06-2", "2026-10-07 07:33", "should I worry about knee pain after long runs",
             "Mild soreness that fades in a day is common; sharp pain, swelling or pain that lasts means rest and a physio."),
            ("raj-06-3", "2026-10-07 07:36", "I'm thinking of buying new running shoes, my Pegasus have 800 km on them",
             "800 km is past the usual 500-700 km life of a shoe; new ones may help the knee."),
        ],
        [
            ("raj-07-1", "2026-10-13 23:10", "committee meeting is tomorrow, I'm so stressed, my slides aren't done",
             "Focus on the story: question, key result, next steps. The slides can be plain."),
            ("raj-07-2", "2026-10-13 23:13", "how many slides for a 20 minute talk",
             "About 12 to 15, roughly one per minute and a half."),
            ("raj-07-3", "2026-10-13 23:18", "the external member, Prof Lindqvist, is known for brutal questions",
             "Prepare for questions about your controls and statistics; those are the usual targets."),
        ],
        [
            ("raj-08-1", "2026-10-15 18:00", "committee meeting went well! they approved my plan to submit the thesis next September",
             "Congratulations! That's a big weight off."),
            ("raj-08-2", "2026-10-15 18:03", "Lindqvist asked about my controls but I had answers",
             "Your preparation paid off."),
            ("raj-08-3", "2026-10-15 18:07", "celebrating with pizza tonight. no satay obviously lol",
             "Enjoy! Well deserved."),
        ],
        [
            ("raj-09-1", "2026-10-24 12:00", "bought the new shoes: Asics Novablast 4, they feel really bouncy",
             "Nice choice for long runs. Break them in on shorter runs first."),
            ("raj-09-2", "2026-10-24 12:03", "knee is fine now, the physio said to strengthen my glutes",
             "Glad to hear it. Strong glutes take load off the knees."),
            ("raj-09-3", "2026-10-24 12:05", "can you give me 3 glute exercises",
             "Glute bridges, clamshells with a band, and Bulgarian split squats."),
            ("raj-09-4", "2026-10-24 12:10", "the car is fixed too, cost 850 in the end",
             "Slightly under the quote, that's something."),
        ],
    ],
    "mei": [
        [
            ("mei-01-1", "2026-09-01 15:00", "hi! I'm making a pixel art game called Lanternfall, it's a cozy puzzle platformer",
             "That sounds lovely! What are you building it with?"),
            ("mei-01-2", "2026-09-01 15:03", "Godot 4. solo dev, been at it for 14 months",
             "Fourteen months solo is impressive commitment."),
            ("mei-01-3", "2026-09-01 15:08", "how do I make a looping tween in godot 4",
             "`var t = create_tween().set_loops()` then chain `tween_property` calls."),
            ("mei-01-4", "2026-09-01 15:20", "my corgi Biscuit needs a walk, brb",
             "Enjoy the walk!"),
        ],
        [
            ("mei-02-1", "2026-09-08 21:30", "I want to launch Lanternfall on Steam in March next year",
             "March is a good window, after the holiday rush."),
            ("mei-02-2", "2026-09-08 21:33", "the Steam page needs a trailer and I have no idea how to edit video",
             "Keep it under a minute, gameplay in the first five seconds, and end with the wishlist button."),
            ("mei-02-3", "2026-09-08 21:35", "what's a good free video editor on linux",
             "Kdenlive, Shotcut, or DaVinci Resolve's free version."),
            ("mei-02-4", "2026-09-08 21:40", "kdenlive it is",
             "Good choice; it has plenty of tutorials."),
        ],
        [
            ("mei-03-1", "2026-09-16 10:00", "I grow chili peppers on my balcony and the Carolina Reaper finally has fruit!",
             "Exciting! Reapers take a long season to ripen."),
            ("mei-03-2", "2026-09-16 10:02", "how do I know when they're ripe",
             "When they turn fully red and glossy and come off the stem with a gentle pull."),
            ("mei-03-3", "2026-09-16 10:06", "also my monstera has yellow leaves, I think I overwater it",
             "Likely. Let the top 5 cm of soil dry out between waterings."),
        ],
        [
            ("mei-04-1", "2026-09-25 16:45", "big decision: I'm moving Lanternfall from Godot to Unity because the publisher's porting team only works with Unity",
             "A big change, but if it unlocks consoles it may be worth it."),
            ("mei-04-2", "2026-09-25 16:48", "the publisher is Pinecone Games, a small team in Montreal. they want a Switch version",
             "Exciting! A Switch version fits a cozy puzzle game well."),
            ("mei-04-3", "2026-09-25 16:52", "they offered a 70/30 split in my favour after recoup",
             "That's generous for an indie deal; check what counts towards recoup."),
        ],
        [
            ("mei-05-1", "2026-10-02 20:00", "I'm moving apartments next month, from Shoreditch to Walthamstow, the rent is cheaper",
             "Walthamstow has great markets and the marshes for walks."),
            ("mei-05-2", "2026-10-02 20:02", "Biscuit will finally have a garden",
             "He'll love it!"),
            ("mei-05-3", "2026-10-02 20:05", "convert 1650 GBP to EUR",
             "At about 1.16 EUR per GBP, that's roughly 1,914 €."),
        ],
        [
            ("mei-06-1", "2026-10-09 23:00", "I'm freaking out, the trailer is due to Pinecone on monday and the music isn't done",
             "Take a breath: you can send a version with placeholder music and swap the track later."),
            ("mei-06-2", "2026-10-09 23:03", "my friend Theo is composing the soundtrack and he's late",
             "Ask him for a date he can commit to, even for a rough mix."),
            ("mei-06-3", "2026-10-09 23:05", "what's a polite way to chase a friend who's late on work",
             "\"Hey, how's it going? I need the track by Sunday evening for the trailer; anything I can do to help?\""),
        ],
        [
            ("mei-07-1", "2026-10-13 12:00", "trailer sent! Theo delivered the track sunday night at 2am lol",
             "Just in time! Congratulations."),
            ("mei-07-2", "2026-10-13 12:03", "Pinecone loved it, they want to show it at a showcase in November",
             "That's fantastic exposure."),
            ("mei-07-3", "2026-10-13 12:08", "the Unity port is going ok, the tilemap system is really different though",
             "Unity's Tilemap plus Rule Tiles can replace Godot's autotiling."),
        ],
        [
            ("mei-08-1", "2026-10-20 19:00", "my parents are visiting from Taipei for two weeks in December",
             "How nice! Have they been to London before?"),
            ("mei-08-2", "2026-10-20 19:03", "no, first time. my dad loves museums and my mum loves markets",
             "The British Museum and V&A for him, Borough Market and Columbia Road for her."),
        ],
        [
            ("mei-09-1", "2026-10-27 09:30", "picked the first reaper peppers and made hot sauce. it is absolutely lethal",
             "Use gloves when you bottle it!"),
            ("mei-09-2", "2026-10-27 09:33", "moved into the Walthamstow flat on saturday, boxes everywhere",
             "Congrats on the move! Unpack the kitchen first."),
            ("mei-09-3", "2026-10-27 09:36", "Biscuit loves the garden, he already dug up a flower bed",
             "Classic corgi behaviour."),
        ],
    ],
    "tom": [
        [
            ("tom-01-1", "2026-09-04 20:15", "evening. we're finally redoing the kitchen, me and my wife Sarah have been saving for two years",
             "Exciting! A new kitchen changes the whole house."),
            ("tom-01-2", "2026-09-04 20:18", "the budget is 18k pounds all in",
             "Keep 10-15% of that as a contingency; old houses hide surprises."),
            ("tom-01-3", "2026-09-04 20:20", "what's 18000 divided by 12",
             "1,500."),
            ("tom-01-4", "2026-09-04 20:25", "I'm doing the demolition myself to save money, the fitters do the rest",
             "Turn off water and electrics first and wear proper gloves and goggles."),
        ],
        [
            ("tom-02-1", "2026-09-11 21:00", "my son Leo turns 7 on october 3rd and he wants a dinosaur party",
             "Great theme! Kids love dinosaur digs."),
            ("tom-02-2", "2026-09-11 21:03", "my daughter Maisie is 4 and she wants to be a dinosaur too lol",
             "A dinosaur costume for her and she'll be the star."),
            ("tom-02-3", "2026-09-11 21:06", "ideas for dinosaur party games",
             "A fossil dig in a sandpit, dinosaur egg hunt, pin the tail on the T-rex, and a piñata."),
        ],
        [
            ("tom-03-1", "2026-09-17 07:00", "did my knee in playing 5-a-side football last night, it's swollen",
             "Rest it and keep it raised. If it stays swollen or gives way, see a doctor."),
            ("tom-03-2", "2026-09-17 07:03", "it's the same left knee I had ACL surgery on in 2019",
             "Then definitely have it checked by a physio."),
            ("tom-03-3", "2026-09-17 07:05", "should I ice it or heat it",
             "Ice for the first 48 hours, 15 minutes at a time."),
        ],
        [
            ("tom-04-1", "2026-09-24 19:30", "the worktop quotes came in: quartz is 4200, laminate 1100",
             "That's a big gap."),
            ("tom-04-2", "2026-09-24 19:34", "Sarah wants quartz and I want to stay in budget. we went with quartz in the end",
             "It will last for decades, so it's not a bad place to spend."),
            ("tom-04-3", "2026-09-24 19:40", "demolition starts saturday, the old units are coming out",
             "Good luck, and mind the knee!"),
        ],
        [
            ("tom-05-1", "2026-10-04 18:00", "Leo's party was chaos but he loved it. 14 kids and a T-rex piñata",
             "Sounds like a success!"),
            ("tom-05-2", "2026-10-04 18:03", "Maisie cried because the piñata got destroyed",
             "Poor Maisie. Maybe a small dino toy of her own would help."),
            ("tom-05-3", "2026-10-04 18:06", "I'm exhausted. we've also been eating takeaway all week because there's no kitchen",
             "A microwave and a kettle in the living room can save you some money until it's done."),
        ],
        [
            ("tom-06-1", "2026-10-12 12:30", "saw the physio about my knee, mild meniscus strain, no football for 6 weeks",
             "Better than it could have been. Do the exercises they gave you."),
            ("tom-06-2", "2026-10-12 12:33", "trying to lose weight while I can't play, want to get from 94 to 88 kg",
             "A realistic goal over three months."),
            ("tom-06-3", "2026-10-12 12:36", "how many calories should I cut per day to lose half a kilo a week",
             "About 500 kcal a day below maintenance."),
        ],
        [
            ("tom-07-1", "2026-10-19 20:00", "the fitters found rot under the sink, part of the floor needs replacing. extra 700 quid",
             "Annoying, but better found now than after the units are in."),
            ("tom-07-2", "2026-10-19 20:02", "so we're over budget now, ugh",
             "That's what the contingency is for, if you kept one."),
            ("tom-07-3", "2026-10-19 20:05", "what's 4200 minus 1100 plus 700",
             "3,800."),
        ],
        [
            ("tom-08-1", "2026-10-26 21:15", "kitchen is done!! first proper dinner at home in a month, I made a roast",
             "Congratulations! Enjoy it."),
            ("tom-08-2", "2026-10-26 21:18", "and I'm down to 91.5 kg",
             "Two and a half kilos in two weeks, great progress."),
            ("tom-08-3", "2026-10-26 21:20", "we might do the bathroom next year but Sarah says never again haha",
             "Give it a few months, everyone says that after a kitchen."),
        ],
    ],
    "lena": [
        [
            ("lena-01-1", "2026-09-02 04:30", "hi, on my break at the hospital. I'm an ICU nurse, on night shifts this month",
             "Hi! Thank you for the work you do. How can I help?"),
            ("lena-01-2", "2026-09-02 04:33", "I can never sleep properly after nights, I get like 4 hours",
             "That's hard on the body. A consistent sleep window helps more than anything."),
            ("lena-01-3", "2026-09-02 04:36", "any tips for sleeping during the day",
             "Blackout curtains, earplugs, a cool room, sunglasses on the way home, and no caffeine after the middle of the shift."),
        ],
        [
            ("lena-02-1", "2026-09-07 14:00", "I'm learning Spanish, about A2 level",
             "¡Muy bien! What's your goal?"),
            ("lena-02-2", "2026-09-07 14:03", "going to Mexico in December with my friend Jess, Oaxaca and Mexico City",
             "Great trip! Oaxaca's food is incredible."),
            ("lena-02-3", "2026-09-07 14:05", "how do you say I'm allergic to shellfish in spanish",
             "\"Soy alérgica a los mariscos.\""),
            ("lena-02-4", "2026-09-07 14:06", "good, because I really am, shrimp gives me hives",
             "Then keep that sentence handy, and carry antihistamines."),
        ],
        [
            ("lena-03-1", "2026-09-15 19:00", "book club tonight, we're reading Piranesi by Susanna Clarke",
             "A beautiful, strange book. Enjoy the discussion!"),
            ("lena-03-2", "2026-09-15 19:02", "I loved it but half the group found it confusing",
             "It does reward patience."),
            ("lena-03-3", "2026-09-15 19:05", "recommend something similar",
             "The Ocean at the End of the Lane, or The Starless Sea."),
        ],
        [
            ("lena-04-1", "2026-09-23 05:10", "rough night. we lost a patient. I don't really want to talk about it, just needed to say it",
             "I'm sorry. Thank you for telling me. Be gentle with yourself today."),
            ("lena-04-2", "2026-09-23 05:12", "thanks. I think I'll go for a long bike ride after I sleep",
             "That sounds like a good way to clear your head."),
        ],
        [
            ("lena-05-1", "2026-10-01 16:00", "good news, I'm switching to day shifts from november! 7am to 7pm",
             "That's great news, your sleep will thank you."),
            ("lena-05-2", "2026-10-01 16:02", "my manager finally approved it after 6 months of asking",
             "Persistence paid off."),
            ("lena-05-3", "2026-10-01 16:05", "what's a good breakfast before a 12 hour shift",
             "Oats with nuts and fruit, or eggs on wholegrain toast: slow energy and protein."),
        ],
        [
            ("lena-06-1", "2026-10-08 18:30", "my bike got stolen outside the hospital. it was a blue Trek FX 2",
             "I'm sorry! Report it to the police with the frame number if you have it."),
            ("lena-06-2", "2026-10-08 18:33", "I only had a cable lock, lesson learned",
             "Cable locks can be cut in seconds, unfortunately."),
            ("lena-06-3", "2026-10-08 18:35", "what's the best type of bike lock",
             "A good D-lock (U-lock), ideally combined with a chain for the wheels."),
        ],
        [
            ("lena-07-1", "2026-10-16 11:00", "bought a second hand Cannondale Quick 4 for 380 euros, plus a Kryptonite D-lock",
             "Good bike and a proper lock this time!"),
            ("lena-07-2", "2026-10-16 11:04", "booked the flights to Mexico, Amsterdam to Mexico City, 740 euros return",
             "Not bad for December."),
            ("lena-07-3", "2026-10-16 11:06", "we fly out on december 12",
             "Only eight weeks away!"),
        ],
        [
            ("lena-08-1", "2026-10-25 21:00", "book club picked the next one: Tomorrow, and Tomorrow, and Tomorrow",
             "A great pick, especially if anyone in the group plays games."),
            ("lena-08-2", "2026-10-25 21:03", "and I passed my Spanish B1 mock exam!",
             "¡Felicidades! Big jump from A2."),
            ("lena-08-3", "2026-10-25 21:06", "nervous about my first day shift though, I haven't worked days in 3 years",
             "The first week will feel strange, then it gets easier. You know the work."),
        ],
    ],
    "omar": [
        [
            ("omar-01-1", "2026-09-03 16:00", "yo, I'm Omar, 2nd year comp sci at TU Delft",
             "Hi Omar! What can I help with?"),
            ("omar-01-2", "2026-09-03 16:02", "I'm learning Rust on the side and the borrow checker is killing me",
             "It gets easier; it's teaching you ownership rules you'd otherwise learn from crashes."),
            ("omar-01-3", "2026-09-03 16:05", "why can't I borrow a Vec as mutable twice",
             "Two `&mut` references could alias the same memory; Rust allows one mutable or many shared borrows at a time."),
        ],
        [
            ("omar-02-1", "2026-09-10 23:00", "my roommate Daan never does the dishes, it's driving me crazy",
             "That's a classic flatmate conflict."),
            ("omar-02-2", "2026-09-10 23:02", "how do I bring it up without a fight",
             "Pick a calm moment, talk about the problem not his character, and propose a concrete fix."),
            ("omar-02-3", "2026-09-10 23:08", "ok we made a chore schedule, let's see if it works",
             "Good step! Put it somewhere visible."),
        ],
        [
            ("omar-03-1", "2026-09-18 13:00", "applying for summer internships. top choice is Adyen, the payments company",
             "Good pick. Apply early, they fill spots on a rolling basis."),
            ("omar-03-2", "2026-09-18 13:04", "my CV has my Rust project on it, a tiny key-value store called kvik",
             "A systems project in Rust stands out."),
            ("omar-03-3", "2026-09-18 13:06", "how long should a CV be for an internship",
             "One page."),
        ],
        [
            ("omar-04-1", "2026-09-26 11:30", "I drink like 5 coffees a day during exam weeks, is that bad",
             "That's around 400-500 mg of caffeine, at the upper limit. Sleep will suffer."),
            ("omar-04-2", "2026-09-26 11:32", "ok I'll try to cut down to 3",
             "A good target."),
            ("omar-04-3", "2026-09-26 11:40", "watching Frieren right now, best anime in years",
             "It's beautifully made."),
        ],
        [
            ("omar-05-1", "2026-10-05 22:00", "got an interview with Adyen on thursday! technical round",
             "Congrats! Want to practise?"),
            ("omar-05-2", "2026-10-05 22:02", "it's live coding in Java or Python, I'll pick Python",
             "Sensible, less boilerplate under pressure."),
            ("omar-05-3", "2026-10-05 22:05", "give me a medium leetcode-style question to practice",
             "Given a grid of 0s and 1s, return the number of islands."),
        ],
        [
            ("omar-06-1", "2026-10-09 17:00", "the Adyen interview went badly, I froze on a graph question",
             "Sorry. Freezing happens to everyone; it's a skill you can train."),
            ("omar-06-2", "2026-10-09 17:03", "I should have used BFS, I knew it but panicked",
             "Next time say your approach out loud first; it buys you time to think."),
            ("omar-06-3", "2026-10-09 17:10", "on the bright side, Daan actually sticks to the chore schedule now",
             "Nice, progress at home at least!"),
        ],
        [
            ("omar-07-1", "2026-10-21 20:00", "Adyen rejected me, but Booking.com invited me to interview on november 2",
             "Onwards! Let's practise graph problems before then."),
            ("omar-07-2", "2026-10-21 20:03", "also kvik got 40 stars on GitHub after someone posted it on Reddit",
             "Cool! That's real recognition."),
            ("omar-07-3", "2026-10-21 20:06", "I'm thinking of adding a write-ahead log to kvik",
             "A WAL is the classic way to make it crash-safe; fsync each batch."),
        ],
        [
            ("omar-08-1", "2026-10-28 15:00", "finished Frieren, now starting Dungeon Meshi",
             "Another great one, and it'll make you hungry."),
            ("omar-08-2", "2026-10-28 15:02", "I'm down to 2 coffees a day, switched to green tea in the afternoon",
             "Well done!"),
            ("omar-08-3", "2026-10-28 15:05", "studying for the algorithms midterm on november 6",
             "Focus on graphs, dynamic programming and complexity."),
        ],
    ],
}

# Everyday requests with no personal facts in them; keywords overlap with the facts above
# on purpose (gym, knee, keyboard, rent, coffee, Berlin, guitar, shoes, interview ...).
GENERIC: list[tuple[str, str]] = [
    ("what's the capital of australia", "Canberra."),
    ("explain recursion like I'm five", "A function that solves a problem by asking a smaller copy of itself for help, until the problem is tiny."),
    ("write a haiku about rain", "Grey roofs drink the sky / a bus hisses through puddles / umbrellas bloom red."),
    ("how many calories are in a banana", "About 105 kcal for a medium banana."),
    ("what's the time in Tokyo right now", "It's 9 hours ahead of UTC there; I can check the exact time with the clock tool."),
    ("is coffee bad for your heart", "For most people moderate coffee, 3-4 cups a day, isn't harmful and may even be protective."),
    ("best mechanical keyboard switches for typing", "Tactile browns or quiet linear reds are popular for typing; clicky blues are loud."),
    ("how do gyms make money if nobody goes", "Mostly from members who pay but rarely come, so they oversell memberships."),
    ("what's a good stretching routine for runners", "Calf stretch, hamstring stretch, hip flexor lunge, and quad stretch, 30 seconds each."),
    ("why does my knee click when I squat", "Painless clicking is usually gas bubbles or tendons moving and is harmless."),
    ("average rent in Berlin for a one bedroom", "Roughly 900-1,300 € warm, depending on the district."),
    ("convert 10 miles to km", "10 miles is about 16.09 km."),
    ("what's the difference between a list and a tuple in python", "Lists are mutable, tuples immutable; tuples can be dict keys."),
    ("how do I center a div", "`display: flex; justify-content: center; align-items: center;` on the parent."),
    ("tell me a joke about programmers", "Why do programmers prefer dark mode? Because light attracts bugs."),
    ("what's the weather going to be like tomorrow in London", "Mild and cloudy, around 13 °C, with a chance of showers in the afternoon."),
    ("how long should I boil an egg", "About 7 minutes for jammy, 10 for hard-boiled."),
    ("recommend a good podcast about history", "The Rest Is History, or Fall of Civilizations."),
    ("what does HTTP 429 mean", "Too Many Requests: you are being rate limited."),
    ("how do you say thank you in japanese", "Arigatou (gozaimasu)."),
    ("what's 15 percent of 240", "36."),
    ("best way to learn a new language fast", "Daily practice, speaking from day one, spaced repetition for vocabulary, and content you enjoy."),
    ("what guitar strings should a beginner use", "Light gauge (.011 or .012) acoustic strings are easier on the fingers."),
    ("are running shoes worth replacing every year", "Replace them by distance, roughly every 500-800 km, not by date."),
    ("tips for a job interview", "Research the company, prepare stories about past work, ask good questions, and arrive early."),
    ("how do I make cold brew", "Coarse coffee and cold water 1:8, steep 16-18 hours in the fridge, then strain."),
    ("summarize the plot of Hamlet in two sentences", "Prince Hamlet seeks revenge on his uncle, who murdered his father and married his mother. Nearly everyone dies."),
    ("is it safe to give cats milk", "Most adult cats are lactose intolerant, so water is better."),
    ("what is kafka used for", "A distributed log for streaming events between services."),
    ("how much sleep does an adult need", "Seven to nine hours for most adults."),
    ("what's a good name for a wifi network", "\"Pretty Fly for a WiFi\" is a classic."),
    ("how to remove a red wine stain", "Blot, then salt or baking soda, then cold water and dish soap."),
    ("what's the tallest mountain in europe", "Mount Elbrus in Russia, 5,642 m; Mont Blanc is the tallest in the Alps."),
    ("how to fix a squeaky door", "A little oil or silicone spray on the hinge pins."),
    ("what's the difference between affect and effect", "Affect is usually the verb, effect usually the noun."),
    ("suggest a board game for 4 players", "Ticket to Ride, Catan or Azul."),
    ("how do I water a cactus", "Rarely: soak the soil, then let it dry out completely."),
    ("what is a write-ahead log", "A log of changes written before applying them, so a crash can be recovered."),
    ("how do vaccines work", "They train the immune system to recognise a pathogen without causing the disease."),
    ("what's the best budget phone right now", "Mid-range Pixels and Samsung A-series are good value."),
    ("how many people live in Lyon", "About 520,000 in the city and 2.3 million in the metro area."),
    ("what's a good dinner for a rainy day", "A big pot of soup or a curry."),
    ("how to get better at public speaking", "Practise out loud, record yourself, slow down, and start with small audiences."),
    ("what's the speed of light", "About 299,792 km per second."),
    ("can dogs eat chocolate", "No, theobromine is toxic to dogs."),
    ("what does BFS stand for", "Breadth-first search."),
    ("how to unclog a drain without chemicals", "Boiling water, then baking soda and vinegar, then a plunger."),
    ("why is the sky blue", "Air scatters short blue wavelengths of sunlight more than red ones."),
    ("how do I split a bill of 87 between 3 people", "29 each."),
    ("good stretches for back pain", "Cat-cow, child's pose, knee-to-chest and gentle twists."),
]


_CITIES = ("Berlin", "Lyon", "London", "Edinburgh", "Delft", "Amsterdam", "Paris", "Porto", "Taipei",
           "Mexico City", "Montreal", "Madrid")
_LANGS = ("German", "Spanish", "French", "Dutch", "Japanese")
_PHRASES = ("good morning", "where is the station", "the bill, please", "I'm tired", "see you tomorrow",
            "how much does it cost", "I'm running late", "happy birthday")


def _templated(rng: random.Random) -> tuple[str, str]:
    """One everyday request of the kinds people repeat: weather, sums, units, translations."""
    kind = rng.randrange(5)
    if kind == 0:
        city = rng.choice(_CITIES)
        day = rng.choice(("today", "tomorrow", "this weekend"))
        temp = rng.randint(4, 19)
        return (f"weather in {city} {day}?",
                f"{city} {day}: around {temp} °C, {rng.choice(('cloudy', 'sunny spells', 'light rain', 'windy'))}.")
    if kind == 1:
        a, b = rng.randint(12, 999), rng.randint(2, 99)
        op, value = rng.choice((("times", a * b), ("plus", a + b), ("minus", a - b)))
        return f"what's {a} {op} {b}", f"{value}."
    if kind == 2:
        n = rng.randint(2, 40)
        unit, other, factor = rng.choice((("km", "miles", 0.621), ("kg", "lbs", 2.205), ("litres", "gallons", 0.264)))
        return f"convert {n} {unit} to {other}", f"{n} {unit} is about {n * factor:.1f} {other}."
    if kind == 3:
        phrase, lang = rng.choice(_PHRASES), rng.choice(_LANGS)
        return f"how do you say '{phrase}' in {lang}", f"In {lang} you can say it like this; want the pronunciation too?"
    city = rng.choice(_CITIES)
    return f"what time is it in {city}", f"Let me check the clock for {city}: it's mid-afternoon there."


def filler_turns(user: str, first_day: str = "2026-09-01", days: int = 58, count: int = 36,
                 templated: int = 70) -> list[Turn]:
    """Generic exchanges for `user` spread over the weeks, deterministic per user.

    `count` come from GENERIC (each once) and `templated` from everyday request templates
    (weather, sums, units, translations), which repeat themselves like real traffic does.
    """
    rng = random.Random(f"filler:{user}")
    picks = rng.sample(GENERIC, k=min(count, len(GENERIC))) + [_templated(rng) for _ in range(templated)]
    start = datetime.fromisoformat(first_day)
    turns: list[Turn] = []
    for n, (ask, answer) in enumerate(picks, start=1):
        when = start + timedelta(days=rng.uniform(0, days), hours=rng.uniform(8, 14))
        turns.append((f"{user}-x-{n:03d}", when.strftime("%Y-%m-%d %H:%M"), ask, answer))
    return turns
