#!/usr/bin/env python3
"""Conversational-memory quality of memdb-server, through the REST path a
client uses (POST /api/v1/conversations, POST /api/v1/query), on real
multi-session dialogue: chitchat (PyPI `chitchat-dataset`, MIT), whose
sender ids persist across conversations, so the conversations of one pair
of people are the dated sessions of one long history.

1. Builds samples: conversations with exactly two senders and at least
   --min-turns turns, grouped by sender pair; pairs with at least
   --min-sessions sessions, the --samples largest. A turn is one run of
   consecutive messages of one sender; speakers get stable first names.
2. Stores each session as one conversation (label "<sample> session N",
   folder "/<sample>"), every turn a message `"Name: text"`, role user,
   metadata {"turn_id": "S<n>:<m>", "session_date": "<date of session>"};
   message timestamps are sent only with --timestamps (a client that sends
   none gets the time of the write).
   With --fill-to N, each sample's folder is padded to at least N turns
   with other pairs' conversations (pairs no sample uses), their senders
   renamed to the sample's two speakers, labelled "<sample> filler N",
   turn ids "F<n>:<m>": a history as long as a heavy user's, at the size
   the issue's latency target names (6,000 messages per sample), whose
   extra turns are never evidence but carry the same two names.
3. Waits until the server's embedding queue is empty (/metrics).
4. Query sets built from the data, seeded (none of them reads a published
   benchmark's questions):
   - fact: a turn with at least 6 content words; the query asks what its
     speaker said about 3 of its content words.
   - context: a short reply (at most 5 content words) to a turn of the
     other speaker with at least 5 content words; the query asks what the
     replier answered when the other talked about 3 content words of the
     turn before. The evidence is the reply, whose own words the query
     barely holds: this is the "Yes, last Tuesday!" case.
   - dated: a fact query that also names the month and year of the
     target's session ("... in May 2018").
   - month-part and seasonal: the dated questions naming instead the
     third of the month ("in early May 2018") or the season ("in the
     spring of 2018") of the target's session.
   - paraphrased: a fact query (on other turns) with two of its three
     words replaced by WordNet synonyms (`benches/src/bin/synonyms.rs`,
     the lookup `retrieval_quality` uses; Debian's wordnet-base), so it
     shares one content word and the speaker's name with its evidence.
     Skipped when the tool or WordNet is missing.
   - written (--written benches/memory/written.jsonl): 300 questions
     written by hand from the six largest samples' turns (50 per sample:
     single fact, multi-turn, temporal, context-dependent reply,
     inference), each with its evidence turn ids; reported as a whole and
     per kind (`w-KIND`). None copies a published benchmark's questions.
     benches/memory/written_blind.jsonl: 180 more, 30 per sample on the
     next six samples (pair06-pair11: run with --samples 12, or with
     --samples 12 --skip-samples 6 for those six alone), written by three
     helper sessions that read only those transcripts, never the ranker: a
     validation set, never tuned on. The blind set has since been swept
     (stops 52-55); benches/memory/written_blind2.jsonl is the next
     validation set: 180 questions on pair12-pair17 (run with --samples 18
     --skip-samples 12), written the same way at stop 56, histories of
     800-880 turns in 9-21 sessions, about 40 parts of 25 turns.
5. Runs every query with limit 10 and the sample's folder filter in
   keyword, semantic and hybrid mode and prints turn recall@5/@10, session
   recall@10 (the evidence turn's session among the sessions of the top
   10; with several evidence turns, the shares of them and of their
   sessions), MRR@10 and client-side p50/p99 latency per set and mode.
6. With --context N: for the first N questions of each set, POST
   /api/v1/context/assemble with --budget tokens (default 2000) and the
   other samples' folders excluded, and the share whose evidence turn is in
   the assembled context.

Usage (run.sh starts the server):
    python3 benches/memory/memory_quality.py --url URL --key KEY [--samples 12]
        [--per-set 40] [--seed 7] [--json FILE] [--timestamps] [--follow-ups SHARE]
        [--fill-to TURNS] [--session-turns N] [--dump FILE]

--session-turns N stores each session as parts of at most N turns, each
its own conversation with the session's date, and session recall counts
parts: a history of many short sessions, the held-out set's shape.
--dump FILE writes each question's top-ten turn ids (JSON lines), to
diff two builds question by question.
"""

import argparse
import collections
import datetime as dt
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The query `weights` of this run (--weights), None for the defaults.
WEIGHTS = None
# --session-turns: sessions stored in parts of at most this many turns.
SESSION_TURNS = 0
WORD = re.compile(r"[A-Za-z][A-Za-z']+")
STOP = set(
    """a about above after again against all am an and any are aren't as at be
    because been before being below between both but by can can't cannot could
    couldn't did didn't do does doesn't doing don't down during each few for
    from further had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself him himself his how how's i i'd i'll i'm i've
    if in into is isn't it it's its itself let's me more most mustn't my myself
    no nor not of off on once only or other ought our ours ourselves out over
    own same shan't she she'd she'll she's should shouldn't so some such than
    that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up
    very was wasn't we we'd we'll we're we've were weren't what what's when
    when's where where's which while who who's whom why why's with won't would
    wouldn't you you'd you'll you're you've your yours yourself yourselves
    yeah yes yep nope okay ok oh haha hahaha lol lmao really just like know
    think got get go going gonna wanna also well much many thing things
    something anything would could one two good great nice cool fun pretty
    lot kind sure right way time day people said say says thats dont im ive
    youre cant wont didnt doesnt isnt theyre whats hey hi hello wow yay
    actually definitely probably maybe totally""".split()
)
LAUGH = re.compile(r"^(?:a?h[aeiou]+)+h?$|^l+o+l+$|^x+d+$")
NAMES = """Avery Blake Carmen Dario Elena Farid Greta Hugo Ines Jonas Keiko Luca
Maren Nadia Omar Priya Quinn Rosa Samir Tessa Umar Vera Wes Xenia Yusuf Zara
Anton Bea Cyril Dana Emil Flora Gil Hana Ivo Jade Kai Lena Milo Nora Otto
Pia Rafa Sofia Theo Uma Viktor Wren Yara Zeno""".split()


def content_words(text):
    out = []
    for w in WORD.findall(text.lower()):
        w = w.strip("'")
        if len(w) >= 3 and w not in STOP and not LAUGH.match(w) and w not in out:
            out.append(w)
    return out


def name_of(sender, taken):
    h = int(hashlib.sha256(sender.encode()).hexdigest(), 16)
    i = h % len(NAMES)
    while NAMES[i] in taken:
        i = (i + 1) % len(NAMES)
    return NAMES[i]


def session_date(ts):
    t = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    hour = t.strftime("%I").lstrip("0") or "12"
    return f"{hour}:{t.strftime('%M')} {t.strftime('%p').lower()} on {t.day} {t.strftime('%B')}, {t.year}"


def two_sender_sessions(raw, min_turns):
    """Every conversation with exactly two senders and at least `min_turns`
    turns, grouped by sender pair: {pair: [{"start", "turns"}]}."""
    pairs = collections.defaultdict(list)
    for key in sorted(raw):
        c = raw[key]
        runs = [r for r in c.get("messages", []) if r]
        senders = {m["sender"] for r in runs for m in r}
        if len(senders) != 2 or len(runs) < min_turns:
            continue
        turns = []
        for r in runs:
            text = " ".join(m["text"].strip() for m in r if m["text"].strip())
            if text:
                turns.append({"sender": r[0]["sender"], "text": text, "ts": r[0].get("timestamp") or c["start"]})
        if len(turns) >= min_turns:
            pairs[tuple(sorted(senders))].append({"start": c["start"], "turns": turns})
    return pairs


def build_samples(path, min_turns, min_sessions, samples, fill_to=0, skip=0):
    """The `samples` pairs with the most turns and at least `min_sessions`
    sessions, the first `skip` of them left out (their names stay). With
    `fill_to`, each sample also gets `filler` sessions: other
    pairs' conversations (pairs no sample uses, each given to one sample),
    their senders renamed to the sample's two speakers, until the sample holds
    at least `fill_to` turns. Filler turns are never evidence; they make the
    history as long as a user's (and as full of the same two names)."""
    raw = json.loads(Path(path).read_text())
    pairs = two_sender_sessions(raw, min_turns)
    chosen = sorted(
        (p for p in pairs.items() if len(p[1]) >= min_sessions),
        key=lambda p: (-sum(len(s["turns"]) for s in p[1]), p[0]),
    )[:samples]
    out = []
    for n, (pair, sessions) in enumerate(chosen):
        if n < skip:
            continue
        sessions.sort(key=lambda s: s["start"])
        names = {}
        for s in pair:
            names[s] = name_of(s, set(names.values()))
        out.append({"name": f"pair{n:02d}", "names": names, "sessions": sessions, "filler": []})
    if fill_to:
        used = {pair for pair, _ in chosen[skip:]}
        spare = [s for pair, ss in sorted(pairs.items()) if pair not in used for s in ss]
        random.Random(11).shuffle(spare)
        for sample in out:
            have = sum(len(s["turns"]) for s in sample["sessions"])
            speakers = list(sample["names"].values())
            while have < fill_to and spare:
                sess = spare.pop()
                first = sess["turns"][0]["sender"]
                turns = [
                    {"name": speakers[0] if t["sender"] == first else speakers[1], "text": t["text"]}
                    for t in sess["turns"]
                ]
                sample["filler"].append({"start": sess["start"], "turns": turns})
                have += len(turns)
            if have < fill_to:
                raise SystemExit(f"not enough conversations to fill {sample['name']} to {fill_to} turns")
    return out


class Client:
    def __init__(self, url, key):
        self.url = url.rstrip("/")
        self.key = key

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.key}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
            ctype = r.headers.get("Content-Type", "")
        return json.loads(raw) if "json" in ctype else raw.decode()


# What --follow-ups appends: the question back that closes many turns of
# generated or more formal dialogue.
FOLLOW_UPS = ["How about you?", "What about you?", "Have you ever tried that?", "What do you think?"]


def keep_parts(samples, questions, max_parts, seed):
    """Per sample, the parts (`session_of` names) a `--max-parts` store
    holds: every part with evidence of `questions`, then other parts in a
    seeded random order until the sample holds `max_parts` (more when its
    evidence alone needs more)."""
    keep = {}
    for s in samples:
        want = {session_of(t) for q in questions if q["sample"] == s["name"] for t in evidence(q)}
        parts = dict.fromkeys(
            session_of(f"S{i}:{j}")
            for i, sess in enumerate(s["sessions"], 1)
            for j in range(1, len(sess["turns"]) + 1)
        )
        others = [p for p in parts if p not in want]
        random.Random(f"{seed}/{s['name']}").shuffle(others)
        keep[s["name"]] = want | set(others[: max(0, max_parts - len(want))])
    return keep


def store(client, samples, timestamps, follow_ups=0.0, seed=7, keep=None):
    """Stores every sample's sessions (and filler) through REST; with `keep`
    (sample name -> the parts `session_of` names), only those parts."""
    count = 0
    rng = random.Random(seed)
    for s in samples:
        for i, sess in enumerate(s["sessions"], 1):
            date = session_date(sess["start"])
            msgs = []
            for j, t in enumerate(sess["turns"], 1):
                text = t["text"]
                if follow_ups > 0 and "?" not in text and rng.random() < follow_ups:
                    text = f"{text} {rng.choice(FOLLOW_UPS)}"
                m = {
                    "role": "user",
                    "content": f"{s['names'][t['sender']]}: {text}",
                    "metadata": {"turn_id": f"S{i}:{j}", "session_date": date},
                }
                if timestamps:
                    m["timestamp"] = t["ts"]
                msgs.append(m)
            step = SESSION_TURNS or len(msgs)
            for k in range(0, len(msgs), step):
                if keep is not None and session_of(msgs[k]["metadata"]["turn_id"]) not in keep[s["name"]]:
                    continue
                label = f"{s['name']} session {i}" + (f" part {k // step + 1}" if SESSION_TURNS else "")
                client.call(
                    "POST",
                    "/api/v1/conversations",
                    {"label": label, "folder": f"/{s['name']}", "messages": msgs[k : k + step]},
                )
            count += len(msgs)
        for i, sess in enumerate(s.get("filler", []), 1):
            if keep is not None:
                break
            date = session_date(sess["start"])
            msgs = [
                {
                    "role": "user",
                    "content": f"{t['name']}: {t['text']}",
                    "metadata": {"turn_id": f"F{i}:{j}", "session_date": date},
                }
                for j, t in enumerate(sess["turns"], 1)
            ]
            client.call(
                "POST",
                "/api/v1/conversations",
                {"label": f"{s['name']} filler {i}", "folder": f"/{s['name']}", "messages": msgs},
            )
            count += len(msgs)
    return count


def wait_embedded(client, timeout=3600):
    start = time.time()
    while time.time() - start < timeout:
        text = client.call("GET", "/metrics")
        m = re.search(r"^memdb_embed_queue_entries (\S+)$", text, re.M)
        if m is None or float(m.group(1)) == 0:
            return time.time() - start
        time.sleep(1)
    raise SystemExit("embedding did not finish")


def synonyms(words):
    """WordNet synonyms through `benches/src/bin/synonyms.rs` (the lookup
    `retrieval_quality` uses), or None when the tool or WordNet is missing."""
    tool = os.environ.get("SYNONYMS_BIN") or str(
        Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release/synonyms"
    )
    try:
        out = subprocess.run([tool], input="\n".join(sorted(words)), capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"paraphrased set skipped: {e}", file=sys.stderr)
        return None
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def make_queries(samples, per_set, seed):
    rng = random.Random(seed)
    prng = random.Random(seed + 1)
    sets = {"fact": [], "context": [], "dated": [], "paraphrased": [], "month-part": [], "seasonal": []}
    syn_of = synonyms({w for s in samples for sess in s["sessions"] for t in sess["turns"]
                       for w in content_words(t["text"])})
    for s in samples:
        seen = collections.Counter(t["text"].lower() for sess in s["sessions"] for t in sess["turns"])
        facts, contexts = [], []
        for i, sess in enumerate(s["sessions"], 1):
            for j, t in enumerate(sess["turns"], 1):
                if seen[t["text"].lower()] != 1:
                    continue
                words = content_words(t["text"])
                if len(words) >= 6:
                    facts.append((i, j, t, words))
                if j > 1 and len(words) <= 5:
                    prev = sess["turns"][j - 2]
                    pw = content_words(prev["text"])
                    if prev["sender"] != t["sender"] and len(pw) >= 5:
                        contexts.append((i, j, t, prev, pw))
        rng.shuffle(facts)
        rng.shuffle(contexts)
        for i, j, t, words in facts[:per_set]:
            q = f"What did {s['names'][t['sender']]} say about {' '.join(rng.sample(words, 3))}?"
            sets["fact"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
        for i, j, t, words in facts[per_set : 2 * per_set]:
            month = dt.datetime.fromisoformat(s["sessions"][i - 1]["start"].replace("Z", "+00:00"))
            about = f"What did {s['names'][t['sender']]} say about {' '.join(rng.sample(words, 2))}"
            q = f"{about} in {month.strftime('%B')} {month.year}?"
            sets["dated"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
            # The same questions naming the third of the month, then the
            # season, the session falls in (no random draw: the other sets
            # stay as they were).
            part = "early" if month.day <= 10 else "mid" if month.day <= 20 else "late"
            q = f"{about} in {part} {month.strftime('%B')} {month.year}?"
            sets["month-part"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
            season = ["winter", "spring", "summer", "fall"][month.month % 12 // 3]
            q = f"{about} in the {season} of {month.year if month.month != 12 else month.year + 1}?"
            sets["seasonal"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
        # Paraphrased: a fact question about a later stretch of the pool,
        # two of its three words swapped for WordNet synonyms, so it shares
        # one content word (and the name) with its evidence. Its own random
        # stream, so the other sets stay as they were.
        if syn_of is not None:
            made = 0
            for i, j, t, words in facts[2 * per_set :]:
                if made == per_set:
                    break
                with_syn = [w for w in words if syn_of.get(w)]
                if len(with_syn) < 3:
                    continue
                picked = prng.sample(with_syn, 3)
                kept = prng.randrange(3)
                shown = [w if k == kept else syn_of[w] for k, w in enumerate(picked)]
                q = f"What did {s['names'][t['sender']]} say about {' '.join(shown)}?"
                sets["paraphrased"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
                made += 1
        for i, j, t, prev, pw in contexts[:per_set]:
            q = (
                f"What did {s['names'][t['sender']]} answer when {s['names'][prev['sender']]} "
                f"talked about {' '.join(rng.sample(pw, 3))}?"
            )
            sets["context"].append({"sample": s["name"], "query": q, "turn": f"S{i}:{j}"})
    return sets


def evidence(q):
    """The question's evidence turn ids: one for the built sets, one or more
    for the written set (`turns`)."""
    return q.get("turns") or [q["turn"]]


def session_of(turn):
    """`S3` for `S3:14`; filler sessions are `F<n>`, never an evidence's.
    With --session-turns N, the stored part: `S3/0` for turns 1..N."""
    session, _, j = turn.partition(":")
    if SESSION_TURNS and j.isdigit():
        return f"{session}/{(int(j) - 1) // SESSION_TURNS}"
    return session


def turn_of(hit):
    """The turn id of a `/api/v1/query` result (its metadata's `turn_id`)."""
    return (hit.get("metadata") or {}).get("turn_id")


def recall_at_10(q, top):
    """Turn recall and session recall of question `q` by the turn ids of
    its top ten: the share of its evidence turns among them, and of its
    evidence sessions among theirs."""
    want = evidence(q)
    wanted_sessions = {session_of(t) for t in want}
    sessions = {session_of(t) for t in top if t}
    return (
        sum(t in top for t in want) / len(want),
        len(wanted_sessions & sessions) / len(wanted_sessions),
    )


def script_args(doc):
    """The arguments of the side scripts that replay the written questions
    against a store this harness filled (`session_pass.py`,
    `session_swap.py`): a client of `--url` with `--key`, and the
    questions of `--written`."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--written", default=str(Path(__file__).resolve().parent / "written.jsonl"))
    ap.add_argument("--session-turns", type=int, default=0,
                    help="the store holds sessions as parts of this many turns (as --session-turns above)")
    a = ap.parse_args()
    global SESSION_TURNS
    SESSION_TURNS = a.session_turns
    questions = [json.loads(line) for line in Path(a.written).read_text().splitlines() if line.strip()]
    return Client(a.url, a.key), questions


def run_set(client, queries, mode, name="", dump=None):
    """Turn recall@k: the share of a question's evidence turns in its top k,
    averaged; session recall@10: the share of its evidence sessions among
    the sessions of its top 10; MRR@10 by its best-ranked evidence turn.
    With one evidence turn these are the usual hit rates. With `dump` (a
    list), each question's top ten is appended to it."""
    r5 = r10 = sess = mrr = 0.0
    lat = []
    for q in queries:
        body = {"query": q["query"], "limit": 10, "mode": mode, "filters": {"folder": f"/{q['sample']}"}}
        if WEIGHTS:
            body["weights"] = WEIGHTS
        t0 = time.perf_counter()
        out = client.call("POST", "/api/v1/query", body)
        lat.append(time.perf_counter() - t0)
        turns = [turn_of(r) for r in out["results"]]
        want = evidence(q)
        ranks = [turns.index(t) + 1 for t in want if t in turns]
        r5 += sum(1 for r in ranks if r <= 5) / len(want)
        turn_recall, session_recall = recall_at_10(q, turns)
        r10 += turn_recall
        sess += session_recall
        mrr += 1 / min(ranks) if ranks else 0
        if dump is not None:
            dump.append({"set": name, "mode": mode, "query": q["query"], "sample": q["sample"],
                         "evidence": want, "top10": turns, "recall@10": turn_recall})
    n = max(len(queries), 1)
    lat.sort()
    return {
        "queries": len(queries),
        "turn_recall@5": r5 / n,
        "turn_recall@10": r10 / n,
        "session_recall@10": sess / n,
        "mrr@10": mrr / n,
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else 0,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0,
    }


def run_context(client, queries, folders, budget):
    """Share of questions whose evidence turn is in the context assembled for
    them with `budget` tokens (the other samples' folders excluded)."""
    hits, lat = 0, []
    for q in queries:
        body = {
            "query": q["query"],
            "context_budget": budget,
            "excluded_folders": [f for f in folders if f != f"/{q['sample']}"],
        }
        t0 = time.perf_counter()
        out = client.call("POST", "/api/v1/context/assemble", body)
        lat.append(time.perf_counter() - t0)
        turns = {(m.get("metadata") or {}).get("turn_id") for m in out["messages"]}
        want = evidence(q)
        hits += sum(1 for t in want if t in turns) / len(want)
    lat.sort()
    return {
        "queries": len(queries),
        "evidence_in_context": hits / max(len(queries), 1),
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else 0,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--data", default=str(ROOT / "benches/data/dataset.json"))
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--min-sessions", type=int, default=4)
    ap.add_argument("--min-turns", type=int, default=10)
    ap.add_argument("--per-set", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--modes", default="keyword,semantic,hybrid")
    ap.add_argument("--timestamps", action="store_true")
    ap.add_argument("--follow-ups", type=float, default=0.0,
                    help="append a question back (\"How about you?\") to this share of the turns that ask nothing, "
                         "seeded: a stress test for the stages that read a turn's `?` (answers, questions)")
    ap.add_argument("--fill-to", type=int, default=0,
                    help="pad each sample with other pairs' conversations, renamed to its two speakers, "
                         "to at least this many turns (a long history's size and latency; filler is never evidence)")
    ap.add_argument("--skip-samples", type=int, default=0,
                    help="leave out the first N of the --samples largest (e.g. --samples 12 --skip-samples 6: "
                         "the blind set's six alone; their pairs may then be filler)")
    ap.add_argument("--skip-store", action="store_true", help="the store already holds the samples")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    ap.add_argument("--context", type=int, default=0, help="also assemble context for this many questions per set")
    ap.add_argument("--budget", type=int, default=2000, help="token budget of --context")
    ap.add_argument("--weights", help="a JSON object sent as the query's `weights` (memdb extension: keyword, semantic, neighbours, answers, second_neighbours, per_conversation, coverage, speaker, questions, short_turns, previous_turn, question_lift, session_mass, session_tail, session_tail_ratio)")
    ap.add_argument("--written", help="a JSONL file of written questions ({sample, kind, query, turns}): "
                    "run as one more set, `written`, and per kind")
    ap.add_argument("--sets", help="only these sets (comma-separated names)")
    ap.add_argument("--json")
    ap.add_argument("--session-turns", type=int, default=0,
                    help="store each session in parts of at most N turns, each its own conversation "
                    "(session recall then counts parts): histories of many short sessions")
    ap.add_argument("--max-parts", type=int, default=0,
                    help="store only each sample's parts (sessions, or --session-turns parts) that hold evidence "
                    "of the --written questions, topped up with other parts (seeded) to this many: a history "
                    "of a few dozen sessions that nearly all hold evidence; runs the written sets only")
    ap.add_argument("--dump", help="write each question's top-10 turn ids here (JSON lines), to diff two runs")
    a = ap.parse_args()
    global WEIGHTS, SESSION_TURNS
    WEIGHTS = json.loads(a.weights) if a.weights else None
    SESSION_TURNS = a.session_turns
    dump = [] if a.dump else None
    samples = build_samples(a.data, a.min_turns, a.min_sessions, a.samples, a.fill_to, a.skip_samples)
    client = Client(a.url, a.key)
    sessions = sum(len(s["sessions"]) for s in samples)
    turns = sum(len(x["turns"]) for s in samples for x in s["sessions"])
    print(f"{len(samples)} samples, {sessions} sessions, {turns} turns", flush=True)
    if a.fill_to:
        sizes = [sum(len(x["turns"]) for x in s["sessions"] + s["filler"]) for s in samples]
        print(f"filler: {sum(len(s['filler']) for s in samples)} sessions, {sum(sizes) - turns} turns; "
              f"{min(sizes)}-{max(sizes)} turns per sample", flush=True)
    names = {s["name"] for s in samples}
    written = []
    if a.written:
        written = [json.loads(line) for line in Path(a.written).read_text().splitlines() if line.strip()]
        written = [q for q in written if q["sample"] in names]
    keep = None
    if a.max_parts:
        if not a.written:
            raise SystemExit("--max-parts keeps the parts of the --written questions: give --written")
        keep = keep_parts(samples, written, a.max_parts, a.seed)
        kept = sum(len(v) for v in keep.values())
        print(f"--max-parts {a.max_parts}: {kept} parts kept ({kept / len(samples):.1f} per sample)", flush=True)
    if not a.skip_store:
        t0 = time.time()
        store(client, samples, a.timestamps, a.follow_ups, a.seed, keep)
        print(f"stored in {time.time() - t0:.1f} s", flush=True)
    waited = wait_embedded(client)
    print(f"embedding finished {waited:.1f} s after the last store", flush=True)
    # The built sets ask about any turn, most of which a --max-parts store
    # leaves out: only the written sets run there.
    sets = {} if a.max_parts else make_queries(samples, a.per_set, a.seed)
    if a.written:
        sets["written"] = written
        for kind in sorted({q["kind"] for q in written}):
            sets[f"w-{kind}"] = [q for q in written if q["kind"] == kind]
    if a.sets:
        chosen = set(a.sets.split(","))
        sets = {k: v for k, v in sets.items() if k in chosen}
    results = {}
    print(f"\n{a.label}")
    print(f"{'set':12} {'mode':9} {'n':>4} {'R@5':>6} {'R@10':>6} {'sessR@10':>8} {'MRR':>6} {'p50ms':>6} {'p99ms':>6}")
    for name, queries in sets.items():
        for mode in a.modes.split(","):
            r = run_set(client, queries, mode, name, dump)
            results[f"{name}/{mode}"] = r
            print(
                f"{name:12} {mode:9} {r['queries']:4d} {r['turn_recall@5']:6.3f} {r['turn_recall@10']:6.3f} "
                f"{r['session_recall@10']:8.3f} {r['mrr@10']:6.3f} {r['p50_ms']:6.1f} {r['p99_ms']:6.1f}",
                flush=True,
            )
    if a.context:
        folders = [f"/{s['name']}" for s in samples]
        print(f"\ncontext assembly, budget {a.budget} tokens (evidence turn in the assembled context)")
        for name, queries in sets.items():
            r = run_context(client, queries[: a.context], folders, a.budget)
            results[f"{name}/context@{a.budget}"] = r
            print(f"{name:8} {r['queries']:4d} {r['evidence_in_context']:6.3f}  p50 {r['p50_ms']:.1f} ms", flush=True)
    if a.dump:
        Path(a.dump).write_text("".join(json.dumps(d) + "\n" for d in dump))
    if a.json:
        Path(a.json).write_text(json.dumps({"label": a.label, "samples": len(samples), "turns": turns, "results": results}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
