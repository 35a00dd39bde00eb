"""The scripted workload shared by run_memorg.py and run_memdb.py (stdlib only).

Every exchange has a stable ``key`` (e.g. ``"db1"``) so results from the two
systems can be matched by *content*, never by id.
"""
from __future__ import annotations

SESSIONS = [
    {
        "user_id": "alice",
        "config": {"max_tokens": 4096, "label": "diff-alice"},
        "conversations": [
            {
                "topics": [
                    {
                        "title": "databases",
                        "exchanges": [
                            ("db1",
                             "How often should I run Postgres VACUUM on a busy table?",
                             "Autovacuum usually handles it; run VACUUM ANALYZE after bulk deletes to reclaim dead tuples."),
                            ("db2",
                             "Does VACUUM FULL lock the whole table while it rewrites it?",
                             "Yes, VACUUM FULL takes an exclusive lock and rewrites every page into a new file."),
                            ("db3",
                             "How do redb write transactions commit?",
                             "redb allows one write transaction at a time; commit makes it durable with a checksummed root."),
                            ("db4",
                             "Can redb read transactions run while a writer is active?",
                             "Yes, readers get MVCC snapshots and never block the single writer."),
                        ],
                    },
                    {
                        "title": "travel",
                        "exchanges": [
                            ("tr1",
                             "I am planning a Lisbon trip in May.",
                             "Lisbon in May is warm; visit Alfama and ride tram 28 up to the castle."),
                            ("tr2",
                             "What is the best way to take the train to Porto?",
                             "Take the Alfa Pendular train from Santa Apolonia to Porto Campanha, about three hours."),
                            ("tr3",
                             "Where should I stay near the Douro riverfront?",
                             "Ribeira sits right on the Douro riverfront, close to the Dom Luis bridge."),
                            ("tr4",
                             "Do I need to book Portugal rail tickets in advance?",
                             "Book CP tickets online a few days early for cheaper fares on the northern line."),
                        ],
                    },
                ],
            }
        ],
    },
    {
        "user_id": "bob",
        "config": {},
        "conversations": [
            {
                "topics": [
                    {
                        "title": "baking",
                        "exchanges": [
                            ("bk1",
                             "How long should I knead sourdough bread dough?",
                             "Knead sourdough for about ten minutes, or use stretch and folds every half hour."),
                            ("bk2",
                             "What oven temperature is right for baking sourdough?",
                             "Bake sourdough at 250 C in a Dutch oven, lid on for the first twenty minutes."),
                        ],
                    }
                ],
            }
        ],
    },
]

# Queries run with scope ALL. ``expect`` is the exchange key a correct search
# must rank first (None = only the topic is asserted); ``topic`` is the topic
# title the top result must belong to.
QUERIES = [
    {"query": "postgres vacuum", "expect": "db1", "topic": "databases"},
    {"query": "redb write transactions commit", "expect": "db3", "topic": "databases"},
    {"query": "trip to portugal", "expect": None, "topic": "travel"},
    {"query": "train to Porto", "expect": "tr2", "topic": "travel"},
    {"query": "Douro riverfront", "expect": "tr3", "topic": "travel"},
    {"query": "sourdough oven temperature", "expect": "bk2", "topic": "baking"},
]

# An extra ALL-scope search with a small max_results (memorg ignores it).
SMALL_LIMIT_QUERY = {"query": "postgres vacuum", "max_results": 3}

LONG_TEXT = " ".join(
    [
        "Memory systems for language models keep a hierarchy of sessions, conversations, topics and exchanges.",
        "Each exchange pairs a user message with a system reply and is embedded for semantic search.",
        "Older material is summarised progressively so that the context window stays within its token budget.",
        "Retrieval mixes keyword matching, vector similarity, recency and importance into one ranked list.",
    ]
    * 6
)
OPTIMIZE_SMALL = 20     # max_tokens much smaller than LONG_TEXT
OPTIMIZE_LARGE = 4000   # max_tokens larger than LONG_TEXT

BAD_QUERY_BYTES = 100 * 1024

# Non-ASCII content: memorg's original_length/optimized_length are Python len()
# (Unicode code points), not UTF-8 bytes.
UNICODE_TEXT = "Café em Lisboa — ração, pão e 東京 🚆 to Porto"


def all_exchanges():
    """Yield (user_id, topic_title, key, user_message, system_message)."""
    for s in SESSIONS:
        for c in s["conversations"]:
            for t in c["topics"]:
                for key, u, m in t["exchanges"]:
                    yield s["user_id"], t["title"], key, u, m


def key_for_user_message(text: str):
    for _uid, _t, key, u, _m in all_exchanges():
        if u == text:
            return key
    return None


def key_for_text(text: str):
    """Find the exchange key whose user message occurs in ``text``."""
    if not isinstance(text, str):
        return None
    best = None
    for _uid, _t, key, u, _m in all_exchanges():
        if u in text:
            best = key
            break
    return best


def topic_of_key(key: str):
    for _uid, t, k, _u, _m in all_exchanges():
        if k == key:
            return t
    return None


def user_of_key(key: str):
    for uid, _t, k, _u, _m in all_exchanges():
        if k == key:
            return uid
    return None
