"""Reminders and scheduled questions: people (through the `remind` tool or /remind) ask the bot
to say or ask something later, and it does, once, where they asked.

- `schedule`: ISO 8601 times in a person's zone, RFC 5545 rules (dateutil), words for times.
- `service`: Reminders, the rules of a new reminder, listing, cancelling, people's zones.
- `tool`: the `remind` tool of a turn.
- `delivery`: ReminderDelivery, the loop that sends each due occurrence exactly once through
  a front end's ReminderSender.

Part of bot/: platform-free; the Discord and console senders live with their front ends.
"""
