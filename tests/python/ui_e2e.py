"""The web UI in a real browser: headless Chromium (Debian's package),
driven by Playwright, against a running memdb-server (tests/suite/ui.rs
starts it with a seeded store and runs this script).

Arguments: BASE_URL WRITE_KEY READ_ONLY_KEY CHROMIUM SCREENSHOT_DIR.
Logs in with the keyboard, browses a folder and pages, opens a conversation,
searches with explain, previews context with the budget slider, pins (the
REST API confirms it), relabels, deletes (Escape cancels first), checks that
stored markup stays text, that a read-only key sees no write controls, that
no request leaves the origin, and saves screenshots of the main views at
1280x800 and 390x844. Prints "checks passed" at the end.
"""

import json
import os
import sys
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE, KEY, RO_KEY, CHROMIUM, SHOTS = sys.argv[1:6]
DESKTOP = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}
# Generous: the suite runs many tests at once on two cores.
TIMEOUT = 30_000
expect.set_options(timeout=TIMEOUT)


def rest(method, path, body=None, key=KEY):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def conversation_by_label(label):
    status, page = rest("GET", "/api/v1/conversations?page_size=100")
    assert status == 200, page
    hits = [c for c in page["results"] if c["label"] == label]
    assert len(hits) == 1, (label, [c["label"] for c in page["results"]])
    return hits[0]


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.evaluate("document.getElementById('toast').classList.remove('shown')")
    page.screenshot(path=os.path.join(SHOTS, name + ".png"), full_page=False, animations="disabled")


class Watch:
    """Collects what must not happen in a page: script errors, console
    errors (a CSP violation is one; an HTTP error status the test asks for
    is not) and requests leaving the origin."""

    def __init__(self, page):
        self.problems = []
        page.on("pageerror", lambda e: self.problems.append("page error: %s" % e))
        page.on(
            "console",
            lambda m: self.problems.append("console %s: %s" % (m.type, m.text))
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None,
        )
        page.on(
            "request",
            lambda r: None
            if r.url.startswith(BASE) or r.url.startswith("data:")
            else self.problems.append("request outside the origin: " + r.url),
        )

    def check(self):
        assert not self.problems, "\n".join(self.problems)


def login(page, key):
    page.goto(BASE + "/ui")
    expect(page.locator("#login-key")).to_be_focused()
    page.keyboard.type(key)
    page.keyboard.press("Enter")  # Enter submits the login form
    expect(page.locator("#nav")).to_be_visible()
    expect(page.locator("#conv-list")).to_be_visible()


def no_horizontal_overflow(page):
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, "page is %spx wide" % width


def desktop(browser):
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page)

    # Login: a wrong key is refused with a message, the right one gets in.
    page.goto(BASE + "/ui")
    expect(page.locator("#login-view")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
    shot(page, "login-desktop")
    page.fill("#login-key", "not-a-key-0123456789abcdefghijklmnopqrstuvwxyz")
    page.keyboard.press("Enter")
    expect(page.locator("#login-error")).to_contain_text("not valid")
    login(page, KEY)
    assert page.evaluate("sessionStorage.getItem('memdb.key')") == KEY
    expect(page.locator("#who-access")).to_have_text("read-write")

    # Focus order: after a view opens its heading has focus; Tab goes on
    # into the view. The views are links in order, then Log out.
    expect(page.locator("#conv-title")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#conv-title ~ form select")).to_be_focused()
    page.locator("#nav a").first.focus()
    for i in range(1, 6):
        page.keyboard.press("Tab")
        expect(page.locator("#nav a").nth(i)).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#logout")).to_be_focused()

    # Paging: 25 bulk conversations + 4 others at 20 a page.
    expect(page.locator(".pager")).to_contain_text("Page 1 of 2")
    page.get_by_role("button", name="Next →").click()
    expect(page.locator(".pager")).to_contain_text("Page 2 of 2")
    expect(page.locator("#conv-list li")).to_have_count(9)

    # Browse a folder.
    page.locator('a[data-folder="/work/rust"]').click()
    expect(page.locator("#conv-title")).to_contain_text("folder /work/rust")
    expect(page.locator("#conv-list li")).to_have_count(2)
    expect(page.locator("#conv-list")).to_contain_text("Rust borrow checker")
    expect(page.locator("#conv-list")).not_to_contain_text("Sourdough")
    shot(page, "conversations-desktop")

    # Open a conversation: its messages.
    page.locator("#conv-list").get_by_role("link", name="Rust borrow checker").click()
    expect(page.locator("#c-title")).to_contain_text("Rust borrow checker")
    expect(page.locator(".messages")).to_contain_text("second mutable borrow")
    expect(page.locator(".messages li")).to_have_count(2)
    shot(page, "conversation-desktop")

    # Pin: Escape closes the dialog and pins nothing; OK (Enter) pins.
    rust = conversation_by_label("Rust borrow checker")
    assert rust["pinned"] is False, rust
    page.locator("#act-pin").click()
    expect(page.locator("dialog[open]")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog")).to_have_count(0)
    expect(page.locator("#act-pin")).to_be_focused()  # focus returns
    assert conversation_by_label("Rust borrow checker")["pinned"] is False
    page.locator("#act-pin").click()
    expect(page.locator("dialog[open]")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("#c-title .badge.pin")).to_have_text("pinned")
    expect(page.locator("#act-pin")).to_have_count(0)
    status, c = rest("GET", "/api/v1/conversations/" + rust["id"])
    assert status == 200 and c["pinned"] is True and c["importance_score"] == 10, c

    # Relabel through the dialog (Enter in the field saves).
    page.locator("#act-label").click()
    page.fill("#dlg-label", "Rust borrow checker notes")
    page.keyboard.press("Enter")
    expect(page.locator("#c-title")).to_contain_text("Rust borrow checker notes")
    assert conversation_by_label("Rust borrow checker notes")["id"] == rust["id"]

    # Search: keyword mode with explain.
    page.get_by_role("link", name="Search").click()
    expect(page.locator("#s-query")).to_be_visible()
    page.fill("#s-query", "borrow checker")
    page.check('input[name="mode"][value="keyword"]')
    expect(page.locator("#s-explain")).to_be_checked()
    page.locator("#s-query").press("Enter")
    expect(page.locator("#search-results li").first).to_be_visible()
    expect(page.locator(".summary")).to_contain_text("mode keyword")
    expect(page.locator("#search-results")).to_contain_text("mutable borrow")
    expect(page.locator("#search-results .explain").first).to_contain_text("BM25")
    expect(page.locator(".results-box")).not_to_contain_text("null")  # no stray values
    shot(page, "search-desktop")
    # Semantic mode without an embedder: the server's error is shown.
    page.check('input[name="mode"][value="semantic"]')
    page.locator("#s-query").press("Enter")
    expect(page.locator(".results-box .error")).to_be_visible()

    # Context preview: the slider sets the budget, each message cites.
    page.get_by_role("link", name="Context").click()
    page.fill("#c-query", "tokio runtime")
    page.fill("#c-budget", "2000")
    expect(page.locator("#c-budget-out")).to_have_text("2000")
    page.locator("#c-query").press("Enter")
    expect(page.locator("#ctx-messages li").first).to_be_visible()
    expect(page.locator("#ctx-summary")).to_contain_text("of 2,000 tokens")
    expect(page.locator("#ctx-messages .citation").first).to_be_visible()
    expect(page.locator("#ctx-messages")).to_contain_text("Tokio runtime")
    shot(page, "context-desktop")
    # Arrow keys move the slider and re-assemble with the new budget.
    page.locator("#c-budget").focus()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#ctx-summary")).to_contain_text("of 1,900 tokens")

    # Stats.
    page.get_by_role("link", name="Stats").click()
    expect(page.locator("#stats-cards")).to_contain_text("29")
    expect(page.locator("table.counts").first).to_contain_text("/work/rust")
    shot(page, "stats-desktop")

    # Knowledge bases (none registered) and a Memorg session by id.
    page.get_by_role("link", name="Knowledge bases").click()
    expect(page.locator("#view h1")).to_have_text("Knowledge bases")
    expect(page.locator("main")).to_contain_text("No knowledge base")
    status, s = rest("POST", "/mcp/tools/create_session", {"user_id": "ada"})
    assert status == 200, s
    sid = s["data"]["session_id"]
    status, c = rest("POST", "/mcp/tools/start_conversation", {"session_id": sid, "title": "Planning"})
    assert status == 200, c
    status, t = rest(
        "POST",
        "/mcp/tools/create_topic",
        {"conversation_id": c["data"]["conversation_id"], "title": "Garden"},
    )
    assert status == 200, t
    status, x = rest(
        "POST",
        "/mcp/tools/add_exchange",
        {"topic_id": t["data"]["topic_id"], "user_message": "When do tomatoes go out?", "system_message": "After the last frost."},
    )
    assert status == 200, x
    page.get_by_role("link", name="Memorg").click()
    expect(page.locator("main")).to_contain_text("Memory usage")
    page.fill("#m-session", sid)
    page.keyboard.press("Enter")
    expect(page.locator(".results-box")).to_contain_text("After the last frost.")
    expect(page.locator(".results-box")).to_contain_text("Garden")
    shot(page, "memorg-desktop")

    # Stored markup is shown as text and never runs.
    page.goto(BASE + "/ui#/conversations?folder=%2Fhome%2Fcooking")
    hostile = '<img src=x onerror="window.__xss=1">'
    expect(page.locator("#conv-list")).to_contain_text(hostile)
    page.locator("#conv-list").get_by_role("link", name=hostile).click()
    expect(page.locator(".messages")).to_contain_text("<script>window.__xss=2</script>")
    assert page.evaluate("window.__xss") is None
    assert page.locator("#view img, #view script").count() == 0

    # Delete: Escape cancels, the confirmed one deletes.
    victim = conversation_by_label(hostile)
    page.locator("#act-delete").click()
    expect(page.locator("dialog[open] button.secondary")).to_be_focused()  # Cancel first
    page.keyboard.press("Escape")
    assert rest("GET", "/api/v1/conversations/" + victim["id"])[0] == 200
    page.locator("#act-delete").click()
    page.locator("dialog[open] button.danger").click()
    expect(page.locator("#conv-title")).to_be_visible()
    assert rest("GET", "/api/v1/conversations/" + victim["id"])[0] == 404

    # Logging out forgets the key.
    page.locator("#logout").click()
    expect(page.locator("#login-view")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('memdb.key')") is None
    watch.check()
    ctx.close()


def narrow(browser):
    ctx = browser.new_context(viewport=NARROW, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page)
    page.goto(BASE + "/ui")
    shot(page, "login-narrow")
    login(page, KEY)
    page.locator('a[data-folder="/work/rust"]').click()
    expect(page.locator("#conv-list li")).to_have_count(2)
    no_horizontal_overflow(page)
    shot(page, "conversations-narrow")
    page.locator("#conv-list").get_by_role("link", name="Tokio runtime").click()
    expect(page.locator(".messages li").first).to_be_visible()
    no_horizontal_overflow(page)
    shot(page, "conversation-narrow")
    page.get_by_role("link", name="Search").click()
    page.fill("#s-query", "sourdough")
    page.locator("#s-query").press("Enter")
    expect(page.locator("#search-results li").first).to_be_visible()
    no_horizontal_overflow(page)
    shot(page, "search-narrow")
    page.get_by_role("link", name="Context").click()
    page.fill("#c-query", "borrow checker")
    page.locator("#c-query").press("Enter")
    expect(page.locator("#ctx-messages li").first).to_be_visible()
    no_horizontal_overflow(page)
    shot(page, "context-narrow")
    watch.check()
    ctx.close()


def read_only(browser):
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    watch = Watch(page)
    login(page, RO_KEY)
    expect(page.locator("#who-access")).to_have_text("read-only")
    page.locator("#conv-list").get_by_role("link", name="Sourdough schedule").click()
    expect(page.locator("#c-title")).to_contain_text("Sourdough schedule")
    expect(page.locator(".messages li").first).to_be_visible()
    for control in ["#act-pin", "#act-archive", "#act-label", "#act-delete", ".actions"]:
        assert page.locator(control).count() == 0, control + " shown to a read-only key"
    # Reads still work with the read-only key.
    page.get_by_role("link", name="Search").click()
    page.fill("#s-query", "sourdough")
    page.locator("#s-query").press("Enter")
    expect(page.locator("#search-results li").first).to_be_visible()
    shot(page, "read-only-desktop")
    watch.check()
    ctx.close()


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            desktop(browser)
            narrow(browser)
            read_only(browser)
        finally:
            browser.close()
    print("ui checks passed")


if __name__ == "__main__":
    main()
