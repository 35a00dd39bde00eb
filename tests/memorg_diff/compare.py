#!/usr/bin/env python3
"""Compare memorg.json (run_memorg.py) with memdb.json (run_memdb.py).

Usage: compare.py memorg.json memdb.json [--lenient-usage]

Prints one line per check (PASS / FAIL / WARN / INFO / DEFECT) and exits 1 if
any check FAILed. Where memorg 0.1.2 is correct, memdb must agree with it;
where memorg is broken (see CONTRACT.md, defect ids M1..), memdb is held to
its documented behaviour instead and the memorg defect is printed.
Defect names printed here match CONTRACT.md section 5.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workload as W  # noqa: E402

MATCH_TYPES = {"keyword", "semantic", "temporal", "hybrid", "importance"}
MEMORG_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")
SHARED_TOOLS = ["create_session", "start_conversation", "add_exchange", "search_context",
                "get_memory_usage", "optimize_context"]
MEMDB_CREATE_TOPIC_KEYS = {"topic_id", "conversation_id", "created_at", "title", "summary"}
MEMDB_SEARCH_KEYS = {"query", "results", "total_results", "pagination", "metadata"}
MEMDB_ITEM_KEYS = {"id", "type", "content", "score", "match_type"}


class Report:
    def __init__(self):
        self.fails = 0
        self.warns = 0
        self.defects = []

    def line(self, tag, msg):
        print(f"{tag:6} {msg}")

    def ok(self, cond, msg, detail=""):
        if cond:
            self.line("PASS", msg)
        else:
            self.fails += 1
            self.line("FAIL", msg + (f" -- {detail}" if detail else ""))
        return cond

    def warn(self, msg):
        self.warns += 1
        self.line("WARN", msg)

    def info(self, msg):
        self.line("INFO", msg)

    def defect(self, name, evidence):
        self.defects.append(name)
        self.line("DEFECT", f"memorg {name}: {evidence}")


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def jtype(x):
    if isinstance(x, bool):
        return "bool"
    if num(x):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, list):
        return "array"
    if isinstance(x, dict):
        return "object"
    return "null"


def parse_ts(s):
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        return t if t.tzinfo is not None else None
    except Exception:
        return None


def top_key(search):
    rs = (search or {}).get("results") or []
    return rs[0].get("key") if rs else None


def keys_of(search):
    return [r.get("key") for r in (search or {}).get("results") or []]


# --------------------------------------------------------------------------- memorg-only evidence
def memorg_defects(R: Report, mg: dict):
    api, mcp = mg.get("api", {}), mg.get("mcp", {})
    se = mg.get("shipped_entrypoints", {})
    if se:
        if "memorg-mcp" not in se.get("console_scripts", []):
            R.defect("M1 no-memorg-mcp-script", f"console scripts in the wheel: {se.get('console_scripts')}")
        if se.get("import_app_mcp_cli", {}).get("rc"):
            R.defect("M2 mcp-cli-syntax-error", f"import app.mcp.cli -> {se['import_app_mcp_cli'].get('stderr_tail')}")
        if se.get("MemorgMCP_run", {}).get("rc"):
            R.defect("M3 MemorgMCP.run-TypeError", f"{se['MemorgMCP_run'].get('stderr_tail')}")
    sse = mg.get("sse_probe")
    if sse and not sse.get("ok"):
        R.defect("M4 sse-transport-crashes", f"{sse.get('server_errors') or sse.get('error')}")
    raw = (mg.get("mcp_raw_stdout_probe") or {}).get("block_buffered_stdout") or {}
    if any(s.get("client_exception") for s in raw.get("searches", [])):
        R.defect("M5 search-prints-to-stdout", "search_context responses lost on stdio (client timeouts) "
                 "when stdout is block-buffered")
    srch = api.get("searches", [])
    allres = [r for s in srch for r in s.get("results", [])]
    if allres and all(r.get("score") == 0 for r in allres) and all(r.get("match_type") == "importance" for r in allres):
        R.defect("M6 scores-all-zero/match-type-importance",
                 f"{len(allres)} results over {len(srch)} queries: every score 0.0, every match_type 'importance'")
    sc = api.get("scoped_searches", [])
    if sc and all(s.get("n_results") == 0 for s in sc):
        R.defect("M7 non-ALL-scopes-empty", f"{[(s['scope'], s['n_results']) for s in sc]}")
    msc = {s["scope"]: s for s in mcp.get("scoped_searches", [])}
    if msc.get("BOGUS", {}).get("total_results") and not msc["BOGUS"].get("is_error"):
        R.defect("M8 bad-scope-silently-ALL", f"MCP scope 'BOGUS' -> {msc['BOGUS']['total_results']} results, "
                 f"'session' -> {msc.get('session', {}).get('total_results')}, 'SESSION' -> "
                 f"{msc.get('SESSION', {}).get('total_results')}")
    sl = api.get("small_limit_search", {})
    if sl and sl.get("n_results", 0) > sl.get("max_results", 0):
        R.defect("M9 max_results-ignored", f"max_results={sl['max_results']} returned {sl['n_results']} results")
    fb = api.get("fts_fallback_search", {})
    hits = api.get("fts_phrase_hits", {})
    if fb and all(k == "vector_hit" for k in fb.get("kinds", [])) and sum(v for k, v in hits.items() if k != "exchanges_reversed_word_order"):
        R.defect("M10 keyword-fallback-dead/duplicates",
                 f"max_results=20: {len(fb['kinds'])} results all vector hits; phrase FTS hits {hits} are appended "
                 f"after them (page 2, never returned) and would duplicate the exchange (topic rows embed snapshots)")
    ev = api.get("storage_evidence", {})
    st = ev.get("stale_snapshots", {})
    if any(x["in_session_snapshot"] != x["in_conversation_row"] for x in st.get("session_snapshot_topic_counts", [])):
        R.defect("M11 stale-child-snapshots", f"{st.get('session_snapshot_topic_counts')}")
    if ev and not ev.get("exchange_row_has_topic_id"):
        R.defect("M12 no-parent-links", f"exchange row keys {ev.get('exchange_row_keys')} (topic only in vector metadata)")
    bc = api.get("bad_calls", [])
    if any(b.get("ok") for b in bc):
        R.defect("M13 bad-input-accepted", f"{[(b['call'], b['ok']) for b in bc]}; active_items "
                 f"{api.get('memory_usage', {}).get('after_workload', {}).get('active_items')} -> "
                 f"{api.get('memory_usage', {}).get('after_bad_calls', {}).get('active_items')}")
    mu = api.get("memory_usage", {}).get("after_workload", {})
    if mu and mu.get("total_tokens") == 0:
        R.defect("M14 total_tokens-always-0", f"{mu}")
    ex = [e for s in api.get("hierarchy", []) for c in s.get("conversations", []) for t in c.get("topics", [])
          for e in t.get("exchanges", [])]
    if ex and all(e.get("importance_score") == 0 for e in ex):
        R.defect("M15 importance-always-0", f"{len(ex)} exchanges, importance_score all 0.0")
    for o in api.get("optimize", []):
        if o.get("optimized_tokens_o200k", 0) > o.get("max_tokens", 1 << 30):
            R.defect("M16 optimize-exceeds-max_tokens",
                     f"max_tokens={o['max_tokens']} -> {o['optimized_tokens_o200k']} o200k tokens (prompt template added)")
    osh = api.get("optimize_short", {})
    if osh and osh.get("optimized_length", 0) > osh.get("original_length", 0):
        R.defect("M17 optimize-grows-short-text", f"{osh['original_length']} chars -> {osh['optimized_length']} chars, "
                 f"{osh.get('llm_calls')} LLM call(s)")
    mi = mg.get("memory_items", {})
    bad = [k for k, v in mi.get("create_memory_item", {}).items() if not v.get("ok")]
    if bad:
        R.defect("M18 memory-items-custom_memory-missing",
                 f"create_memory_item fails for {bad}: {mi['create_memory_item'][bad[0]].get('error')}")
    if mi.get("search_memory", {}).get("ok") is False:
        R.defect("M19 search_memory-raises", mi["search_memory"].get("error"))
    ret = mi.get("create_memory_item", {}).get("exchange", {})
    if ret.get("ok") and ret.get("retrieved", {}).get("content") == "":
        R.defect("M20 memory-item-content-lost", "exchange item retrieved with content '' and tags [] parent_id None")


# --------------------------------------------------------------------------- comparisons
def compare_tools(R: Report, mg: dict, md: dict):
    mtools = {t["name"]: t for t in mg.get("mcp", {}).get("tools", [])}
    dtools = {t["name"]: t for t in md.get("tools", [])}
    R.ok(not md.get("missing_tools"), "memdb exposes all 7 memorg tools", f"missing {md.get('missing_tools')}")
    for name in SHARED_TOOLS:
        mt, dtool = mtools.get(name), dtools.get(name)
        if not mt or not dtool:
            continue
        ms, ds = mt.get("input_schema") or {}, dtool.get("input_schema") or {}
        mprops, dprops = set(ms.get("properties", {})), set(ds.get("properties", {}))
        R.ok(mprops <= dprops, f"{name}: memdb accepts memorg's arguments {sorted(mprops)}",
             f"memdb properties {sorted(dprops)}")
        extra_req = set(ds.get("required", [])) - set(ms.get("required", []))
        R.ok(not extra_req, f"{name}: memdb requires nothing memorg does not", f"extra required {sorted(extra_req)}")
        extra = sorted(dprops - mprops)
        if extra:
            R.info(f"{name}: memdb-only arguments {extra}")


def compare_results(R: Report, mg: dict, md: dict):
    mvals = (mg.get("canonical") or {}).get("tool_values") or {}
    dres = md.get("results", {})
    for name in SHARED_TOOLS:
        mv = mvals.get(name)
        dv = (dres.get(name) or {}).get("value")
        if not isinstance(mv, dict):
            R.warn(f"{name}: no memorg result recorded")
            continue
        if not R.ok(isinstance(dv, dict), f"{name}: memdb returned a JSON object", f"got {json.dumps(dres.get(name))[:300]}"):
            continue
        missing = sorted(set(mv) - set(dv))
        R.ok(not missing, f"{name}: result has memorg's keys {sorted(mv)}", f"missing {missing}")
        extra = sorted(set(dv) - set(mv))
        if extra:
            R.info(f"{name}: memdb-only result keys {extra}")
        for k in sorted(set(mv) & set(dv)):
            if jtype(mv[k]) != jtype(dv[k]):
                R.ok(False, f"{name}.{k}: JSON type {jtype(dv[k])} matches memorg's {jtype(mv[k])}")
        st = (dres.get(name) or {})
        if st.get("structured") is not None and st.get("json") is not None and st["structured"] != st["json"]:
            R.warn(f"{name}: structured content differs from the JSON text item")
    # created_at format (memorg: datetime.now(timezone.utc).isoformat())
    for name in ("create_session", "start_conversation", "add_exchange"):
        v = (dres.get(name) or {}).get("value") or {}
        ts = v.get("created_at")
        if ts is None:
            continue
        R.ok(parse_ts(ts) is not None and parse_ts(ts).utcoffset() == dt.timedelta(0),
             f"{name}.created_at is an ISO-8601 UTC timestamp", repr(ts))
        R.ok(bool(MEMORG_TS.match(ts)), f"{name}.created_at has memorg's exact form YYYY-MM-DDTHH:MM:SS.ffffff+00:00",
             repr(ts))
    ct = (dres.get("create_topic") or {}).get("value")
    if R.ok(isinstance(ct, dict), "create_topic returned a JSON object"):
        R.ok(MEMDB_CREATE_TOPIC_KEYS <= set(ct), f"create_topic has keys {sorted(MEMDB_CREATE_TOPIC_KEYS)}",
             f"got {sorted(ct)}")
        if ct.get("created_at"):
            R.ok(bool(MEMORG_TS.match(ct["created_at"])), "create_topic.created_at has memorg's exact form",
                 repr(ct["created_at"]))
    sv = (dres.get("search_context") or {}).get("value") or {}
    if sv:
        R.ok(MEMDB_SEARCH_KEYS <= set(sv), f"search_context has memdb's documented keys {sorted(MEMDB_SEARCH_KEYS)}",
             f"got {sorted(sv)}")
        items = sv.get("results") or []
        if items:
            R.ok({"score", "content", "type"} <= set(items[0]), "search result items have memorg's keys score/content/type",
                 f"got {sorted(items[0])}")
            R.ok(MEMDB_ITEM_KEYS <= set(items[0]), f"search result items have {sorted(MEMDB_ITEM_KEYS)}",
                 f"got {sorted(items[0])}")
            types = {i.get("type") for i in items}
            if not types <= MATCH_TYPES:
                R.info(f"search result 'type' values {sorted(map(str, types))}: memorg's 'type' carries the match type "
                       f"(MatchType.value); memdb's carries something else (match type is in 'match_type')")
        pg = sv.get("pagination") or {}
        R.ok({"current_page", "total_pages", "total_items", "items_per_page"} <= set(pg),
             "search_context.pagination has current_page/total_pages/total_items/items_per_page", f"got {sorted(pg)}")
        md_ = sv.get("metadata") or {}
        R.ok({"query_terms", "entities", "temporal_constraints"} <= set(md_),
             "search_context.metadata has query_terms/entities/temporal_constraints", f"got {sorted(md_)}")


def compare_hierarchy(R: Report, mg: dict, md: dict):
    mh = (mg.get("canonical") or {}).get("hierarchy") or []
    dh = md.get("hierarchy") or []
    R.ok(len(mh) == len(dh), f"session count {len(dh)} == memorg {len(mh)}")
    for ms, ds in zip(mh, dh):
        u = ms.get("user_id")
        R.ok(ds.get("user_id") == u, f"session user_id {ds.get('user_id')!r} == {u!r}")
        R.ok(ds.get("system_config") == ms.get("system_config"), f"{u}: system_config echoed",
             f"{ds.get('system_config')} vs {ms.get('system_config')}")
        mc, dc = ms.get("conversations", []), ds.get("conversations", [])
        R.ok(len(mc) == len(dc), f"{u}: conversation count {len(dc)} == {len(mc)}")
        for i, (c1, c2) in enumerate(zip(mc, dc)):
            R.ok(c2.get("title") == c1.get("title"), f"{u}/conv{i}: default title {c2.get('title')!r} == memorg {c1.get('title')!r}")
            R.ok(c2.get("summary") == c1.get("summary"), f"{u}/conv{i}: default summary {c2.get('summary')!r} == memorg {c1.get('summary')!r}")
            t1 = [t.get("title") for t in c1.get("topics", [])]
            t2 = [t.get("title") for t in c2.get("topics", [])]
            R.ok(t1 == t2, f"{u}/conv{i}: topic titles {t2} == {t1}")
            for a, b in zip(c1.get("topics", []), c2.get("topics", [])):
                k1 = [e.get("key") for e in a.get("exchanges", [])]
                k2 = [e.get("key") for e in b.get("exchanges", [])]
                R.ok(k1 == k2, f"{u}/{a.get('title')}: exchanges {k2} == {k1}")
                R.ok(b.get("summary") == a.get("summary"), f"{u}/{a.get('title')}: topic summary {b.get('summary')!r} == {a.get('summary')!r}")
                for e1, e2 in zip(a.get("exchanges", []), b.get("exchanges", [])):
                    if (e1.get("user_message"), e1.get("system_message")) != (e2.get("user_message"), e2.get("system_message")):
                        R.ok(False, f"{u}/{a.get('title')}/{e1.get('key')}: messages echoed verbatim",
                             f"{e2.get('user_message')!r} / {e2.get('system_message')!r}")
                    if not num(e2.get("importance_score")):
                        R.ok(False, f"{e1.get('key')}: importance_score is a number", repr(e2.get("importance_score")))
                if b.get("conversation_id") is not None:
                    R.ok(b["conversation_id"] == c2.get("conversation_id"),
                         f"{u}/{a.get('title')}: create_topic.conversation_id is its conversation")
    R.info("memorg importance_score values: "
           f"{sorted({e.get('importance_score') for s in mh for c in s.get('conversations', []) for t in c.get('topics', []) for e in t.get('exchanges', [])})}; "
           "memdb: "
           f"{sorted({str(e.get('importance_score')) for s in dh for c in s.get('conversations', []) for t in c.get('topics', []) for e in t.get('exchanges', [])})}")


def check_search_list(R: Report, label: str, s: dict, max_results: int | None = None):
    """memdb's documented search behaviour for one result list."""
    if not R.ok(not s.get("is_error"), f"{label}: not an error", s.get("error_text") or s.get("client_exception") or ""):
        return False
    res = s.get("results") or []
    scores = [r.get("score") for r in res]
    R.ok(all(num(x) and x > 0 for x in scores), f"{label}: every score > 0", f"{scores}")
    R.ok(all(a >= b for a, b in zip(scores, scores[1:])) if all(num(x) for x in scores) else False,
         f"{label}: scores in descending order", f"{scores}")
    mts = [r.get("match_type") for r in res]
    R.ok(all(m in MATCH_TYPES for m in mts), f"{label}: match_type in {sorted(MATCH_TYPES)}", f"{mts}")
    ids = [r.get("id") for r in res]
    R.ok(len(ids) == len(set(ids)), f"{label}: no duplicate results", f"{ids}")
    if max_results is not None:
        R.ok(len(res) <= max_results, f"{label}: at most max_results={max_results} results", f"got {len(res)}")
    tr = s.get("total_results")
    R.ok(isinstance(tr, int) and tr >= len(res), f"{label}: total_results is an int >= len(results)", repr(tr))
    return True


def compare_searches(R: Report, mg: dict, md: dict):
    msearch = (mg.get("canonical") or {}).get("searches") or []
    dsearch = md.get("searches") or []
    all_md_mts = []
    memorg_scores_broken = bool(msearch) and all(
        r.get("score") == 0 and r.get("match_type") == "importance" for s in msearch for r in s.get("results", []))
    for i, qd in enumerate(W.QUERIES):
        ms = msearch[i] if i < len(msearch) else {}
        ds = dsearch[i] if i < len(dsearch) else {}
        q = qd["query"]
        mtop, dtop = top_key(ms), top_key(ds)
        if qd["expect"]:
            memorg_ok = mtop == qd["expect"]
        else:
            memorg_ok = W.topic_of_key(mtop) == qd["topic"] if mtop else False
        if not check_search_list(R, f"search {q!r}", ds, 10):
            continue
        all_md_mts += [r.get("match_type") for r in ds.get("results", [])]
        if memorg_ok:
            if qd["expect"]:
                R.ok(dtop == mtop, f"search {q!r}: memdb top exchange {dtop} == memorg top {mtop}",
                     f"memdb order {keys_of(ds)[:5]}, memorg order {keys_of(ms)[:5]}")
            else:
                R.ok(W.topic_of_key(dtop) == qd["topic"],
                     f"search {q!r}: memdb top {dtop} is in topic {qd['topic']!r} (memorg top {mtop})",
                     f"memdb order {keys_of(ds)[:5]}")
        else:
            R.info(f"search {q!r}: memorg ranks {mtop} first (expected {qd['expect'] or qd['topic']}): memorg wrong here")
            want = qd["expect"]
            R.ok(dtop == want if want else W.topic_of_key(dtop) == qd["topic"],
                 f"search {q!r}: memdb top {dtop} is the expected {want or qd['topic']}")
    if memorg_scores_broken:
        R.info("memorg defect M6 (scores-all-zero/match-type-importance) -> memdb held to: scores > 0, descending, "
               "match_type in the 5 values and not all 'importance'")
    R.ok(bool(all_md_mts) and not all(m == "importance" for m in all_md_mts),
         "memdb match types are not all 'importance'", f"{sorted(set(map(str, all_md_mts)))}")
    sl = md.get("small_limit_search") or {}
    if sl:
        check_search_list(R, f"search max_results={W.SMALL_LIMIT_QUERY['max_results']}", sl, W.SMALL_LIMIT_QUERY["max_results"])
        msl = (mg.get("api") or {}).get("small_limit_search") or {}
        if msl:
            R.info(f"memorg returned {msl.get('n_results')} results for max_results={msl.get('max_results')} (defect M9)")
    p2 = md.get("page2_search") or {}
    if p2 and not p2.get("is_error"):
        pg = p2.get("pagination") or {}
        R.ok(pg.get("current_page") == 2, "page=2: pagination.current_page == 2", f"{pg}")
        first = set(keys_of(sl))
        R.ok(not (first & set(keys_of(p2))), "page=2 does not repeat page 1's results", f"{keys_of(sl)} / {keys_of(p2)}")
    elif p2:
        R.ok(False, "search_context(page=2) works", p2.get("error_text") or "")


def compare_scopes(R: Report, mg: dict, md: dict):
    sc = md.get("scoped") or {}
    if not sc:
        R.ok(False, "memdb scoped searches were recorded")
        return
    R.info("memorg defect M7: every non-ALL scope returns []; memdb must filter by scope_id instead")
    keys = {}
    for uid, t, k, _u, _m in W.all_exchanges():
        keys.setdefault(("topic", t), set()).add(k)
        keys.setdefault(("user", uid), set()).add(k)
    db, tr, bob, alice = keys[("topic", "databases")], keys[("topic", "travel")], keys[("user", "bob")], keys[("user", "alice")]

    def only(label, s, allowed, must_top=None, nonempty=True):
        if not check_search_list(R, label, s):
            return
        got = [k for k in keys_of(s)]
        R.ok(all(k in allowed for k in got), f"{label}: only {sorted(allowed)}", f"got {got}")
        if nonempty:
            R.ok(bool(got), f"{label}: non-empty")
        if must_top:
            R.ok(got[:1] == [must_top], f"{label}: top is {must_top}", f"got {got[:3]}")

    only("TOPIC databases 'postgres vacuum'", sc.get("topic_databases_postgres", {}), db, "db1")
    only("TOPIC databases 'train to Porto'", sc.get("topic_databases_porto", {}), db, nonempty=False)
    only("TOPIC travel 'train to Porto'", sc.get("topic_travel_porto", {}), tr, "tr2")
    only("SESSION bob 'postgres vacuum'", sc.get("session_bob_postgres", {}), bob, nonempty=False)
    only("SESSION bob 'sourdough oven temperature'", sc.get("session_bob_sourdough", {}), bob, "bk2")
    only("SESSION alice 'sourdough oven temperature'", sc.get("session_alice_sourdough", {}), alice, nonempty=False)
    only("CONVERSATION alice 'sourdough oven temperature'", sc.get("conversation_alice_sourdough", {}), alice, nonempty=False)
    for label, m in (md.get("topic_membership") or {}).items():
        uid, title = label.split("/", 1)
        want = keys[("topic", title)]
        got = set(m.get("keys", []))
        R.ok(not m.get("is_error") and got <= want, f"TOPIC {label}: membership search returns only its exchanges",
             f"got {sorted(got)} want subset of {sorted(want)}")
        if got != want:
            R.warn(f"TOPIC {label}: membership search returned {sorted(got)} of {sorted(want)}")


def compare_usage(R: Report, mg: dict, md: dict, lenient: bool):
    mu = ((mg.get("canonical") or {}).get("memory_usage") or {}).get("after_workload") or {}
    du = (md.get("memory_usage") or {}).get("after_workload") or {}
    du2 = (md.get("memory_usage") or {}).get("after_bad_calls") or {}
    if not R.ok(bool(du), "get_memory_usage returned counters"):
        return
    for k in ("total_tokens", "active_items", "compressed_items", "vector_count", "index_size"):
        R.ok(isinstance(du.get(k), int) and not isinstance(du.get(k), bool) and du[k] >= 0,
             f"get_memory_usage.{k} is a non-negative int", repr(du.get(k)))
    if du.get("active_items") == mu.get("active_items"):
        R.ok(True, f"active_items {du.get('active_items')} == memorg {mu.get('active_items')} "
             "(rows of sessions+conversations+topics+exchanges)")
    elif lenient:
        R.warn(f"active_items {du.get('active_items')} != memorg {mu.get('active_items')} (lenient)")
    else:
        R.ok(False, f"active_items {du.get('active_items')} == memorg {mu.get('active_items')} "
             "(memorg counts rows of sessions+conversations+topics+exchanges: 2+2+3+10)")
    if du.get("vector_count") != mu.get("vector_count"):
        R.warn(f"vector_count {du.get('vector_count')} != memorg {mu.get('vector_count')} (memorg: one vector per exchange)")
    R.info(f"usage memorg={mu} memdb={du}")
    if mu.get("total_tokens") == 0:
        R.info(f"memorg defect M14: total_tokens always 0; memdb reports {du.get('total_tokens')}")
    R.ok(du2.get("active_items") == du.get("active_items"),
         f"bad calls left active_items unchanged ({du.get('active_items')} -> {du2.get('active_items')})")


def compare_bad_calls(R: Report, mg: dict, md: dict):
    for b in md.get("bad_calls") or []:
        if b.get("required_error"):
            R.ok(b.get("is_error") and not b.get("client_exception"),
                 f"bad call {b['call']}: isError result with a message",
                 f"is_error={b.get('is_error')} texts={b.get('texts')} client_exception={b.get('client_exception')}")
            if b.get("is_error") and not (b.get("texts") and b["texts"][0].strip()):
                R.ok(False, f"bad call {b['call']}: error message is not empty")
        else:
            R.info(f"bad call {b['call']}: is_error={b.get('is_error')} {b.get('texts', [''])[:1]}")
    mb = {b["call"]: b for b in (mg.get("mcp") or {}).get("bad_calls", [])}
    acc = [c for c, b in mb.items() if not b.get("is_error")]
    if acc:
        R.info(f"memorg defect M13: memorg accepted {acc}")


def count_tokens(text):
    try:
        import tiktoken
        return {n: len(tiktoken.get_encoding(n).encode(text)) for n in ("o200k_base", "cl100k_base")}
    except Exception:
        return {"words": len(text.split())}


def compare_optimize(R: Report, mg: dict, md: dict):
    for o in md.get("optimize") or []:
        mt = o["max_tokens"]
        v = o.get("value") or {}
        label = f"optimize_context(max_tokens={mt})"
        if not R.ok(not o.get("is_error") and isinstance(v.get("optimized_content"), str), f"{label}: returns optimized_content",
                    json.dumps(v)[:300]):
            continue
        oc = v["optimized_content"]
        R.ok(v.get("original_length") == len(W.LONG_TEXT), f"{label}: original_length == len(content) "
             f"({len(W.LONG_TEXT)} chars, as memorg)", repr(v.get("original_length")))
        R.ok(v.get("optimized_length") == len(oc), f"{label}: optimized_length == len(optimized_content)",
             f"{v.get('optimized_length')} vs {len(oc)}")
        R.ok(len(oc) <= len(W.LONG_TEXT), f"{label}: not longer than the input", f"{len(oc)} > {len(W.LONG_TEXT)}")
        toks = count_tokens(oc)
        if mt < min(count_tokens(W.LONG_TEXT).values()):
            R.ok(min(toks.values()) <= mt, f"{label}: result fits max_tokens ({toks})",
                 "memorg defect M16 has the same bug; memdb must not")
        else:
            if oc != W.LONG_TEXT:
                R.warn(f"{label}: content already fits but was changed ({len(oc)} chars)")
            else:
                R.ok(True, f"{label}: content that already fits is returned unchanged")


def compare_unicode(R: Report, md: dict):
    u = md.get("optimize_unicode") or {}
    if not u:
        return
    v = u.get("value") or {}
    if R.ok(not u.get("is_error") and isinstance(v, dict), "optimize_context(non-ASCII content) works"):
        R.ok(v.get("original_length") == u["code_points"],
             f"original_length counts Unicode code points like memorg's len() ({u['code_points']}, "
             f"not {u['utf8_bytes']} UTF-8 bytes)", repr(v.get("original_length")))
        oc = v.get("optimized_content")
        if isinstance(oc, str):
            R.ok(v.get("optimized_length") == len(oc), "optimized_length counts code points too",
                 f"{v.get('optimized_length')} vs {len(oc)}")


def compare_extras(R: Report, md: dict):
    ex = md.get("extras") or {}
    if not ex:
        return
    sc = ex.get("start_conversation_with_title") or {}
    R.ok(sc.get("title") == "Trip planning", "start_conversation(title=...) echoes the title", repr(sc.get("title")))
    ct = ex.get("create_topic_with_summary") or {}
    R.ok(ct.get("summary") == "a short summary", "create_topic(summary=...) echoes the summary", repr(ct.get("summary")))
    cs = ex.get("create_session_default_config") or {}
    R.ok(not cs.get("is_error") and (cs.get("value") or {}).get("system_config") == {},
         "create_session without config defaults to {}", json.dumps(cs)[:200])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memorg_json")
    ap.add_argument("memdb_json")
    ap.add_argument("--lenient-usage", action="store_true", help="active_items mismatch is a WARN, not a FAIL")
    args = ap.parse_args()
    mg = json.load(open(args.memorg_json))
    md = json.load(open(args.memdb_json))
    R = Report()
    print(f"== memorg {mg.get('versions', {}).get('memorg')} (canonical source: {mg.get('canonical', {}).get('source')}) "
          f"vs memdb {md.get('binary')} (server {md.get('server_info')})")
    print("== memorg defects observed in memorg.json")
    memorg_defects(R, mg)
    print("== memdb run")
    for e in md.get("errors") or []:
        R.ok(False, "memdb run completed", e)
    if not md.get("tools"):
        R.ok(False, "memdb MCP server answered initialize/list_tools", (md.get("server_stderr_tail") or "")[-800:])
    else:
        print("== tools and schemas")
        compare_tools(R, mg, md)
        print("== result shapes")
        compare_results(R, mg, md)
        print("== hierarchy")
        compare_hierarchy(R, mg, md)
        print("== search_context, scope ALL")
        compare_searches(R, mg, md)
        print("== memdb-only scopes")
        compare_scopes(R, mg, md)
        print("== get_memory_usage")
        compare_usage(R, mg, md, args.lenient_usage)
        print("== bad calls")
        compare_bad_calls(R, mg, md)
        print("== optimize_context")
        compare_optimize(R, mg, md)
        compare_unicode(R, md)
        print("== extras")
        compare_extras(R, md)
    print(f"== {R.fails} failed, {R.warns} warnings, {len(R.defects)} memorg defects observed")
    if R.fails:
        print(f"memorg_diff: FAIL ({R.fails} check(s) failed; see FAIL lines above)")
        return 1
    print("memorg_diff: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
