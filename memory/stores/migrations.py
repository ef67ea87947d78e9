"""Numbered schema migrations for the SQLite file (channel buffer, traces).

Each migration is applied once, in order, inside the transaction that opens the file, and is
recorded in the ``schema_migrations`` table; ``PRAGMA user_version`` holds the number of the
last one applied and is what decides what to run. Migrations are added, never edited: a
released file may hold any earlier version and is upgraded in place.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIGRATIONS", "Migration", "SCHEMA_VERSION"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: ``version`` is its number, ``statements`` run in order."""

    version: int
    name: str
    statements: tuple[str, ...]


m001_channel_buffer = Migration(
    1,
    "m001_channel_buffer",
    (
        """
        CREATE TABLE buffer_messages (
            id            INTEGER PRIMARY KEY,
            channel_id    TEXT NOT NULL,
            guild_id      TEXT,
            author_id     TEXT NOT NULL,
            author_name   TEXT NOT NULL,
            role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'other')),
            content       TEXT NOT NULL,
            created_at_us INTEGER NOT NULL,
            message_id    TEXT
        )
        """,
        "CREATE INDEX buffer_messages_channel_time ON buffer_messages (channel_id, created_at_us, id)",
        "CREATE INDEX buffer_messages_time ON buffer_messages (created_at_us)",
        """
        CREATE UNIQUE INDEX buffer_messages_discord_id ON buffer_messages (channel_id, message_id)
        WHERE message_id IS NOT NULL
        """,
    ),
)

m002_traces = Migration(
    2,
    "m002_traces",
    (
        """
        CREATE TABLE traces (
            trace_id          TEXT PRIMARY KEY,
            channel_id        TEXT NOT NULL,
            guild_id          TEXT,
            user_id           TEXT NOT NULL,
            question          TEXT NOT NULL,
            events_json       TEXT NOT NULL,
            outcome           TEXT NOT NULL,
            answer            TEXT NOT NULL,
            steps             INTEGER NOT NULL,
            prompt_tokens     INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            elapsed_ms        REAL NOT NULL,
            created_at_us     INTEGER NOT NULL,
            message_id        TEXT,
            interaction_id    TEXT
        )
        """,
        "CREATE INDEX traces_message ON traces (message_id) WHERE message_id IS NOT NULL",
        "CREATE INDEX traces_interaction ON traces (interaction_id) WHERE interaction_id IS NOT NULL",
        "CREATE INDEX traces_user_channel ON traces (user_id, channel_id, created_at_us)",
    ),
)

# A turn's memory write, announced before it is sent to the memory store and cleared in the
# transaction that stores the turn: a row left over names a write whose turn was never stored
# (a crash, or an add that timed out yet landed later), to be undone (memory.stores.write_log).
m003_memory_writes = Migration(
    3,
    "m003_memory_writes",
    (
        """
        CREATE TABLE memory_writes (
            trace_id      TEXT PRIMARY KEY,
            user_id       TEXT NOT NULL,
            created_at_us INTEGER NOT NULL
        )
        """,
    ),
)

# Per-server / per-channel settings (memory.stores.guild_settings): one row per value, channel_id ''
# for the server's own value; every change (a value set, or cleared: value_json NULL) is kept
# in the log with who made it.
m004_guild_settings = Migration(
    4,
    "m004_guild_settings",
    (
        """
        CREATE TABLE guild_settings (
            guild_id      TEXT NOT NULL,
            channel_id    TEXT NOT NULL,
            key           TEXT NOT NULL,
            value_json    TEXT NOT NULL,
            updated_by    TEXT NOT NULL,
            updated_at_us INTEGER NOT NULL,
            PRIMARY KEY (guild_id, channel_id, key)
        )
        """,
        """
        CREATE TABLE guild_settings_log (
            id            INTEGER PRIMARY KEY,
            guild_id      TEXT NOT NULL,
            channel_id    TEXT NOT NULL,
            key           TEXT NOT NULL,
            value_json    TEXT,
            actor_id      TEXT NOT NULL,
            created_at_us INTEGER NOT NULL
        )
        """,
        "CREATE INDEX guild_settings_log_guild ON guild_settings_log (guild_id, created_at_us)",
    ),
)

# Tokens the model reported, summed per UTC day, person and place ('' = DMs): daily budgets
# (memory.stores.usage).
m005_token_usage = Migration(
    5,
    "m005_token_usage",
    (
        """
        CREATE TABLE token_usage (
            day      TEXT NOT NULL,
            user_id  TEXT NOT NULL,
            guild_id TEXT NOT NULL,
            tokens   INTEGER NOT NULL CHECK (tokens >= 0),
            PRIMARY KEY (day, user_id, guild_id)
        )
        """,
        "CREATE INDEX token_usage_guild ON token_usage (day, guild_id)",
    ),
)

m006_deferred_memory_writes = Migration(
    6,
    "m006_deferred_memory_writes",
    # the items of a stored turn whose memory write failed, kept to be written later (JSON)
    ("ALTER TABLE memory_writes ADD COLUMN deferred_json TEXT",),
)

# A person's rows found without a scan: their buffer rows for a forget (memory.stores.erasure), and
# traces by age for the retention period.
m007_person_and_age_indexes = Migration(
    7,
    "m007_person_and_age_indexes",
    (
        "CREATE INDEX buffer_messages_author ON buffer_messages (author_id)",
        "CREATE INDEX traces_time ON traces (created_at_us)",
    ),
)

# The memories an answer recalled, by item id and rank (JSON), for /trace (memory.stores.traces):
# the items themselves stay in the memory store, so a forgotten one is gone from the trace too.
m008_trace_recalled = Migration(
    8,
    "m008_trace_recalled",
    ("ALTER TABLE traces ADD COLUMN recalled_json TEXT",),
)

# Reminders and scheduled questions (memory.stores.reminders): a row is a pending reminder
# (deleted when its last occurrence is sent, or cancelled); ``prepared`` keeps the text of the
# occurrence being sent across a crash. A person's own time zone, for times without an offset.
m009_reminders = Migration(
    9,
    "m009_reminders",
    (
        """
        CREATE TABLE reminders (
            id            INTEGER PRIMARY KEY,
            user_id       TEXT NOT NULL,
            display_name  TEXT NOT NULL,
            guild_id      TEXT,
            channel_id    TEXT NOT NULL,
            by_dm         INTEGER NOT NULL CHECK (by_dm IN (0, 1)),
            message       TEXT NOT NULL,
            ask           INTEGER NOT NULL CHECK (ask IN (0, 1)),
            rule          TEXT,
            zone          TEXT NOT NULL,
            start_local   TEXT NOT NULL,
            due_at_us     INTEGER NOT NULL,
            prepared      TEXT,
            created_at_us INTEGER NOT NULL
        )
        """,
        "CREATE INDEX reminders_due ON reminders (due_at_us)",
        "CREATE INDEX reminders_user ON reminders (user_id, due_at_us)",
        """
        CREATE TABLE user_timezones (
            user_id       TEXT PRIMARY KEY,
            zone          TEXT NOT NULL,
            updated_at_us INTEGER NOT NULL
        )
        """,
    ),
)

# Server documents (memory.documents): what an admin added, and its passages (the text the
# search returns; the vectors live in Chroma under the passage's id).
m010_server_documents = Migration(
    10,
    "m010_server_documents",
    (
        """
        CREATE TABLE documents (
            id          TEXT PRIMARY KEY,
            guild_id    TEXT NOT NULL,
            title       TEXT NOT NULL,
            source      TEXT NOT NULL,
            kind        TEXT NOT NULL,
            size_bytes  INTEGER NOT NULL,
            chars       INTEGER NOT NULL,
            added_by    TEXT NOT NULL,
            added_at_us INTEGER NOT NULL
        )
        """,
        "CREATE INDEX documents_guild ON documents (guild_id, added_at_us)",
        """
        CREATE TABLE document_passages (
            document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
            ordinal     INTEGER NOT NULL,
            guild_id    TEXT NOT NULL,
            section     TEXT NOT NULL,
            text        TEXT NOT NULL,
            PRIMARY KEY (document_id, ordinal)
        )
        """,
        "CREATE INDEX document_passages_guild ON document_passages (guild_id)",
    ),
)

# A channel's running summary (memory.stores.summaries): what was said before the buffer rows
# that still fit the context, folded by the model; it covers the rows up to `through_us`.
m011_channel_summaries = Migration(
    11,
    "m011_channel_summaries",
    (
        """
        CREATE TABLE channel_summaries (
            channel_id    TEXT PRIMARY KEY,
            summary       TEXT NOT NULL,
            through_us    INTEGER NOT NULL,
            folded        INTEGER NOT NULL,
            updated_at_us INTEGER NOT NULL
        )
        """,
    ),
)

# Whose words each running summary has folded in, so that a person's forget finds the summaries
# that carry their words after their own buffer rows have aged out (memory.stores.erasure).
m012_summary_authors = Migration(
    12,
    "m012_summary_authors",
    (
        """
        CREATE TABLE channel_summary_authors (
            channel_id TEXT NOT NULL REFERENCES channel_summaries (channel_id) ON DELETE CASCADE,
            author_id  TEXT NOT NULL,
            guild_id   TEXT,  -- the channel's server; NULL: a DM
            PRIMARY KEY (channel_id, author_id)
        )
        """,
        "CREATE INDEX channel_summary_authors_author ON channel_summary_authors (author_id)",
    ),
)

# Which channels each forget erased someone's words in (memory.stores.erasure), numbered, so that
# a running summary folded from messages read before a forget is not stored after it
# (memory.stores.summaries.save); a row matters only while such a fold may run, and a later forget
# prunes it. AUTOINCREMENT: a number is never given twice, even once the rows are pruned.
m013_channel_forgets = Migration(
    13,
    "m013_channel_forgets",
    (
        """
        CREATE TABLE channel_forgets (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            channel_id TEXT NOT NULL,
            at_us      INTEGER NOT NULL
        )
        """,
        "CREATE INDEX channel_forgets_channel ON channel_forgets (channel_id, seq)",
    ),
)

# The traces' lookup by slash-command interaction was never made by the bot (a /trace finds the
# newest trace of the person in the channel, or the trace of the message it answers): its index
# only slowed the writes.
m014_drop_traces_interaction_index = Migration(
    14,
    "m014_drop_traces_interaction_index",
    ("DROP INDEX traces_interaction",),
)

MIGRATIONS: tuple[Migration, ...] = (m001_channel_buffer, m002_traces, m003_memory_writes, m004_guild_settings,
                                     m005_token_usage, m006_deferred_memory_writes,
                                     m007_person_and_age_indexes, m008_trace_recalled, m009_reminders,
                                     m010_server_documents, m011_channel_summaries, m012_summary_authors,
                                     m013_channel_forgets, m014_drop_traces_interaction_index)
SCHEMA_VERSION = MIGRATIONS[-1].version

MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""
