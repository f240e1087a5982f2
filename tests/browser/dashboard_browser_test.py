#!/usr/bin/env python3
"""The dashboard in a real headless browser (Debian's chromium, chromium-driver
and python3-selenium).

Starts `kairos server` on free ports with jobs in several states (paused,
failing with retries, skipped by overlap, misfired across a server stop,
cancelled, a label carrying an XSS probe), then checks in the browser: the
overview's counts; the job list's filters; the timeline's skipped and
coalesced occurrences with their reasons; pause then resume through the
buttons (seen in the API); a stale action's 412 message; the probe rendered
as text; and, with --auth-token-file, that the pages need the login (cookie
session, CSRF token on actions).

Usage: dashboard_browser_test.py KAIROS_BINARY [--screenshots DIR]
Exit 77 (ctest SKIP_RETURN_CODE) only when chromium or its driver is absent.
Real time with generous bounds; every wait polls a condition.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
if not CHROMIUM or not DRIVER:
    print("SKIP: chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
    sys.exit(SKIP)

from selenium import webdriver  # noqa: E402  (python3-selenium; a missing one is a failure)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

KAIROS = os.path.abspath(sys.argv[1])
SHOTS = sys.argv[sys.argv.index("--screenshots") + 1] if "--screenshots" in sys.argv else None
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


def fail(msg):
    print(f"FAIL: {msg}")
    if server.log and os.path.exists(server.log):
        with open(server.log, errors="replace") as f:
            for line in f.readlines()[-40:]:
                print("  | " + line.rstrip())
    raise SystemExit(1)


def wait_for(what, cond, timeout=60.0, step=0.2):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            last = cond()
            if last:
                return last
        except Exception as e:  # a transient error while the page or server moves on
            last = e
        time.sleep(step)
    fail(f"{what}: not within {timeout:.0f}s (last: {last!r})")


class Server:
    def __init__(self):
        self.proc = None
        self.port = None
        self.log = None
        self.token = None

    def start(self, data, token_file=None):
        self.log = os.path.join(work, "server.log")
        args = [KAIROS, "server", "--data-dir", data, "--workers", "2", "--node-id", "browser",
                "--shards", "2", "--lease-ttl", "3s", "--listen", "none", "--http", "127.0.0.1:0"]
        if token_file:
            args += ["--auth-token-file", token_file]
        out = open(self.log, "w")
        self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)

        def up():
            if self.proc.poll() is not None:
                fail("the server exited before it was ready")
            with open(self.log) as f:
                text = f.read()
            for line in text.splitlines():
                if line.startswith("kairos server: http api on 127.0.0.1:"):
                    self.port = int(line.rsplit(":", 1)[1])
            return self.port and "ready" in text
        wait_for("server start", up)
        wait_for("readyz", lambda: self.call("GET", "/readyz")[0] == 200)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(timeout=60) != 0:
            fail("the server did not stop cleanly on SIGTERM")

    def call(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(headers or {})
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null"), r.headers.get("ETag")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null"), None

    def url(self, frag=""):
        return f"http://127.0.0.1:{self.port}/{frag}"


def job(id, schedule, argv, policy=None, labels=None):
    j = {"id": id, "schedule": schedule, "command": {"argv": argv}, "labels": labels or {}}
    if policy:
        j["policy"] = policy
    return j


def occurrences(id):
    return server.call("GET", f"/v1/jobs/{id}/occurrences?limit=1000")[1]["occurrences"]


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,1000"):
        o.add_argument(a)
    d = webdriver.Chrome(service=Service(DRIVER), options=o)
    d.set_page_load_timeout(60)
    return d


def text_of(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text if els else ""


def click(d, element_id):
    """Clicks the element once it is there (retried while the page re-renders)."""
    def attempt():
        d.find_element(By.ID, element_id).click()
        return True
    wait_for(f"click #{element_id}", attempt)


def open_job(d, id, query=""):
    d.get(server.url(f"#/job/{id}{query}"))
    wait_for(f"job page {id}", lambda: text_of(d, "#job-id") == id)


def confirm(d):
    wait_for("confirm dialog", lambda: d.find_element(By.ID, "confirm").is_displayed())
    d.find_element(By.ID, "confirm-yes").click()


work = tempfile.mkdtemp(prefix="kairos-browser-")
server = Server()
driver = None
try:
    data = os.path.join(work, "data")
    server.start(data)
    jobs = [
        job("paused-job", {"every": "1h"}, ["/bin/true"], labels={"team": "ops"}),
        job("failing-job", {"every": "2s"}, ["/bin/false"],
            {"max_attempts": 3, "retry_initial": "1s", "retry_max": "1s", "retry_jitter_percent": 0},
            {"team": "data"}),
        job("overlap-job", {"every": "1s"}, ["/bin/sleep", "4"], {"overlap": "skip"}, {"team": "data"}),
        job("misfire-job", {"every": "2s"}, ["/bin/true"],
            {"misfire": "run-once", "misfire_threshold": "1s"}, {"team": "data"}),
        job("toggle-job", {"every": "1h"}, ["/bin/true"], labels={"team": "ops"}),
        job("cancelled-job", {"every": "1h"}, ["/bin/true"]),
        job("xss-probe", {"every": "1h"}, ["/bin/true"], labels={"probe": XSS}),
    ]
    for j in jobs:
        st, body, _ = server.call("POST", "/v1/jobs", j)
        if st != 201:
            fail(f"create {j['id']}: {st} {body}")
    assert server.call("POST", "/v1/jobs/paused-job:pause")[0] == 200
    assert server.call("DELETE", "/v1/jobs/cancelled-job")[0] == 200
    wait_for("overlap skips", lambda: any(o["outcome"] == "skipped_overlap"
                                          for o in occurrences("overlap-job")))
    wait_for("a failing run retried", lambda: any(
        r["attempt"] >= 2 for r in server.call("GET", "/v1/jobs/failing-job/runs")[1]["runs"]))
    wait_for("misfire-job fired", lambda: any(o["outcome"] == "fired"
                                              for o in occurrences("misfire-job")))
    # A server stop longer than the misfire threshold: run-once coalesces.
    server.stop()
    time.sleep(7)
    server.start(data)
    wait_for("coalesced after the stop", lambda: any(o["outcome"] == "coalesced"
                                                     for o in occurrences("misfire-job")))

    driver = browser()
    d = driver
    d.get(server.url())
    wait_for("overview counts", lambda: text_of(d, "#count-active") == "5")
    if text_of(d, "#count-paused") != "1" or text_of(d, "#count-cancelled") != "1":
        fail(f"overview counts: paused {text_of(d, '#count-paused')}, "
             f"cancelled {text_of(d, '#count-cancelled')}")
    wait_for("runs chart", lambda: d.find_elements(By.CSS_SELECTOR, "#runs-chart rect"))
    wait_for("shard leaders", lambda: "browser" in text_of(d, "#shards"))
    wait_for("runs counted", lambda: "0 succeeded, 0 failed" not in text_of(d, "#runs-total"))
    if SHOTS:
        time.sleep(1)
        d.save_screenshot(os.path.join(SHOTS, "overview.png"))

    # The job list and its filters.
    d.get(server.url("#/jobs?state=paused"))
    wait_for("paused filter", lambda: [r.get_attribute("data-id") for r in
                                       d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")] == ["paused-job"])
    d.get(server.url("#/jobs"))
    wait_for("full list", lambda: len(d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr[data-id]")) == 7)
    d.find_element(By.ID, "f-search").send_keys("fail")
    d.find_element(By.ID, "apply").click()
    wait_for("search filter", lambda: [r.get_attribute("data-id") for r in
                                       d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")] == ["failing-job"])
    wait_for("last outcome", lambda: "failed" in text_of(d, "#jobs tbody tr"))
    d.get(server.url("#/jobs?selector=team%3Dops"))
    wait_for("selector filter", lambda: sorted(r.get_attribute("data-id") for r in
                                               d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")) ==
             ["paused-job", "toggle-job"])

    # The XSS probe is text: no element came from it and no script ran.
    d.get(server.url("#/jobs?search=xss"))
    wait_for("probe row", lambda: XSS in text_of(d, "#jobs tbody"))
    if d.find_elements(By.CSS_SELECTOR, "#jobs tbody img, #jobs tbody script"):
        fail("the XSS probe became markup in the list")
    open_job(d, "xss-probe")
    wait_for("probe spec", lambda: XSS in text_of(d, "#spec"))
    if d.find_elements(By.CSS_SELECTOR, "#spec img, #spec script") or d.execute_script(
            "return window.__xss"):
        fail("the XSS probe ran or became markup on the job page")

    # The timeline: skipped and coalesced occurrences with their reasons.
    open_job(d, "overlap-job", "?range=1h")
    wait_for("overlap marks", lambda: d.find_elements(
        By.CSS_SELECTOR, "#timeline g.occ[data-outcome=skipped_overlap]"))
    mark = d.find_element(By.CSS_SELECTOR, "#timeline g.occ[data-outcome=skipped_overlap]")
    d.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", mark)
    wait_for("overlap reason on click", lambda: "skipped: overlap" in text_of(d, "#occ-detail"))
    wait_for("overlap in the list", lambda: "skipped: overlap" in text_of(d, "#occ-list"))
    open_job(d, "misfire-job", "?range=15m")
    wait_for("coalesced marks", lambda: d.find_elements(
        By.CSS_SELECTOR, "#timeline g.occ[data-outcome=coalesced]"))
    li = wait_for("coalesced reason", lambda: [e.text for e in d.find_elements(
        By.CSS_SELECTOR, "#occ-list li[data-outcome=coalesced]")])
    if "coalesced" not in li[0] or "—" not in li[0]:
        fail(f"a coalesced occurrence without its reason: {li[0]!r}")
    wait_for("next fires", lambda: len(d.find_elements(By.CSS_SELECTOR, "#next-fires tbody tr")) == 10)
    if SHOTS:
        d.save_screenshot(os.path.join(SHOTS, "job.png"))

    # Pause then resume through the buttons; the API sees both.
    open_job(d, "toggle-job")
    click(d, "act-pause")
    confirm(d)
    wait_for("paused in the API", lambda: server.call("GET", "/v1/jobs/toggle-job")[1]["status"]["paused"])
    click(d, "act-resume")
    confirm(d)
    wait_for("resumed in the API",
             lambda: not server.call("GET", "/v1/jobs/toggle-job")[1]["status"]["paused"])

    # A stale page: someone else changes the job; the page's pause gets 412.
    wait_for("page shows pause again", lambda: d.find_element(By.ID, "act-pause"))
    st, _, _ = server.call("PATCH", "/v1/jobs/toggle-job", {"labels": {"team": "ops", "v": "2"}})
    if st != 200:
        fail(f"patch: {st}")
    click(d, "act-pause")
    confirm(d)
    wait_for("412 message", lambda: "changed since this page was loaded" in text_of(d, "#banner"))
    if server.call("GET", "/v1/jobs/toggle-job")[1]["status"]["paused"]:
        fail("a stale pause was applied")
    wait_for("page reloaded with the new generation", lambda: "v=2" in text_of(d, "#spec"))
    driver.quit()
    driver = None
    server.stop()

    # With a token: the pages need the login; actions carry the CSRF token.
    token_file = os.path.join(work, "tokens")
    with open(token_file, "w") as f:
        f.write("browser-s3cret\n")
    server.token = "browser-s3cret"
    server.start(data, token_file)
    driver = browser()
    d = driver
    d.get(server.url("#/jobs"))
    wait_for("login form", lambda: d.find_element(By.ID, "login-form"))
    if d.find_elements(By.CSS_SELECTOR, "#jobs"):
        fail("the job list showed before the login")
    d.find_element(By.ID, "token").send_keys("wrong")
    d.find_element(By.ID, "login").click()
    wait_for("wrong token refused", lambda: "Wrong token" in text_of(d, "#login-error"))
    status = d.execute_async_script(
        "const done = arguments[0]; fetch('/v1/jobs').then((r) => done(r.status));")
    if status != 401:
        fail(f"/v1/jobs without a session: {status}")
    d.find_element(By.ID, "token").clear()
    d.find_element(By.ID, "token").send_keys("browser-s3cret")
    d.find_element(By.ID, "login").click()
    wait_for("list after login", lambda: len(d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr[data-id]")) == 7)
    cookies = {c["name"]: c for c in d.get_cookies()}
    c = cookies.get("kairos_session")
    if not c or not c.get("httpOnly") or c.get("sameSite") != "Strict":
        fail(f"session cookie: {c}")
    if d.execute_script("return document.cookie").find("kairos_session") >= 0:
        fail("the session cookie is readable from JavaScript")
    no_csrf = d.execute_async_script(
        "const done = arguments[0];"
        "fetch('/v1/jobs/toggle-job:pause', {method: 'POST'}).then((r) => done(r.status));")
    if no_csrf != 401:
        fail(f"a cookie POST without the CSRF token: {no_csrf}")
    open_job(d, "toggle-job")
    click(d, "act-pause")
    confirm(d)
    wait_for("paused through the session",
             lambda: server.call("GET", "/v1/jobs/toggle-job")[1]["status"]["paused"])
    print("PASS: dashboard browser test")
finally:
    if driver:
        driver.quit()
    if server.proc and server.proc.poll() is None:
        server.proc.kill()
    shutil.rmtree(work, ignore_errors=True)
