"""``zoo hub serve``'s web pages, opened in a real headless Chromium.

The hub runs in this process (127.0.0.1, port 0, a token file). Its content comes the way a user's does:
a real ``zoo push --yes --capture-video`` of the bundled CleanRL dqn run (model card, eval.json written by
``zoo eval``, replay.mp4, the card's two images), then the real huggingface_hub client for branches, a
tag, a commit, a pull request, a private repo, another author's repo and a hostile card. The browser
opens the index, searches and filters, opens the model page, plays its video, follows the commit and PR
URLs the client printed, signs in through the form for the private repo, and runs axe-core's checks.
Screenshots go to ``$ZOO_TEST_ARTIFACTS/hub-web`` (or ``.cache/test-artifacts/hub-web``).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from helpers import EXAMPLES, REPO
from test_hub_server import hub_log, run_client

from zoo.hub_server import scores
from zoo.hub_server.server import HubServer
from zoo.hub_server.web.pages import human_size

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ALICE, BOB = "hf_ALICEwebpages0123456789abcdefghijk", "hf_BOBwebpages0123456789abcdefghijklm"
MODEL = "alice/cartpole-dqn"
PRIVATE = "lab/private-policy"
EVIL = "alice/evil-card"
OTHER = "bob/pendulum-td3"

HOSTILE_CARD = """---
tags: [hostile]
---
# Hostile card

<script>document.title = "pwned by script"; window.pwned = 1;</script>
<img src="missing.png" onerror="document.title = 'pwned by onerror'; window.pwned = 2">
<a id="js-link" href="javascript:document.title='pwned by link'">a javascript: link</a>
[markdown js link](javascript:window.pwned=3)
<div onclick="window.pwned = 4" style="position:fixed;inset:0">overlay</div>
<iframe src="https://example.org/"></iframe>
<svg onload="window.pwned = 5"></svg>

![](pics/curve.png)

[the notes](notes.txt) and [a site](https://example.org/).
"""

CLIENT_SCRIPT = """
from pathlib import Path
ALICE, BOB, stage = {alice!r}, {bob!r}, Path({stage!r})
curve = (stage / "images" / "learning_curve.png").read_bytes()
api.create_branch({model!r}, branch="experiment", token=ALICE)
api.create_tag({model!r}, tag="v1.0", token=ALICE)
notes = api.create_commit({model!r}, [CommitOperationAdd("notes.txt", b"trained on a laptop\\n")],
                          commit_message="Add notes", commit_description="Why: a reader asked.", token=ALICE)
pr = api.create_commit({model!r}, [CommitOperationAdd("notes.txt", b"trained on a laptop, 50k steps\\n"),
                                   CommitOperationDelete("events.out.tfevents.1796029650.vm.11207.0")],
                       commit_message="Say how long it trained", create_pr=True, token=ALICE)
out["notes"] = {{"oid": notes.oid, "url": notes.commit_url}}
out["pr"] = {{"oid": pr.oid, "url": pr.commit_url, "pr_url": pr.pr_url, "pr_num": pr.pr_num}}
api.create_branch({model!r}, branch="feature/x", token=ALICE)
from huggingface_hub import HfUri  # the web URLs huggingface_hub makes (hf:// URIs to browser URLs)
web = lambda **kw: HfUri(type="model", id={model!r}, **kw).to_url(endpoint=api.endpoint)
out["web"] = {{"pr_file": web(revision="refs/pr/1", path_in_repo="notes.txt"), "branch": web(revision="feature/x"),
              "image": web(path_in_repo="images/learning_curve.png"), "card": web(path_in_repo="README.md")}}

api.create_repo({private!r}, private=True, token=ALICE)
api.create_commit({private!r}, [
    CommitOperationAdd("README.md", b"---\\ntags: [secret-tag]\\n---\\n# Secret policy card\\n\\n![curve](curve.png)\\n"),
    CommitOperationAdd("curve.png", curve)], commit_message="private model", token=ALICE)

api.create_repo({evil!r}, token=ALICE)
api.create_commit({evil!r}, [CommitOperationAdd("README.md", {hostile!r}.encode()),
                             CommitOperationAdd("pics/curve.png", curve),
                             CommitOperationAdd("notes.txt", b"notes\\n")], commit_message="hostile", token=ALICE)

api.create_repo({other!r}, token=BOB)
card = ("---\\nlibrary_name: stable-baselines3\\ntags: [Pendulum-v1, reinforcement-learning]\\nmodel-index:\\n"
        "- name: TD3\\n  results:\\n  - task: {{type: reinforcement-learning}}\\n"
        "    dataset: {{name: Pendulum-v1, type: Pendulum-v1}}\\n"
        "    metrics:\\n    - {{type: mean_reward, value: -150.00 +/- 10.00, name: mean_reward}}\\n---\\n# TD3\\n")
api.create_commit({other!r}, [CommitOperationAdd("README.md", card.encode())], commit_message="card", token=BOB)
"""


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The hub with its content; ``site["push"]`` is ``zoo push --json``'s output, ``site["client"]`` the
    client script's (commit and PR URLs)."""
    home = tmp_path_factory.mktemp("hub-web")
    tokens = home / "tokens.txt"
    tokens.write_text(f"{ALICE} alice lab\n{BOB} bob\n")
    with hub_log() as log, HubServer(home / "root", token_file=tokens).start() as hub:
        src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
        run = home / "runs" / src.name
        shutil.copytree(src, run)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "ZOO_ALLOW"))}
        env.update(
            HF_ENDPOINT=hub.url,
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HOME=str(home / "hf-home"),
            HF_TOKEN=ALICE,
            ZOO_CACHE_DIR=str(home / "zoo-cache"),
        )
        cmd = [
            sys.executable,
            "-m",
            "zoo",
            "push",
            str(run),
            "--repo-id",
            MODEL,
            "--yes",
            "--json",
            "--episodes",
            "2",
            "--capture-video",
            "--stage-dir",
            str(home / "stage"),
        ]
        pushed = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert pushed.returncode == 0, pushed.stderr[-4000:]
        push = json.loads(pushed.stdout)
        assert push["status"] == "committed", push
        script = CLIENT_SCRIPT.format(
            alice=ALICE,
            bob=BOB,
            stage=str(home / "stage"),
            model=MODEL,
            private=PRIVATE,
            evil=EVIL,
            other=OTHER,
            hostile=HOSTILE_CARD,
        )
        client = run_client(hub, script, home)
        yield {"hub": hub, "log": log, "push": push, "client": client, "stage": home / "stage"}


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail(
            f"Chromium is needed for this test: {CHROMIUM} or {CHROMEDRIVER} is missing; install them "
            "(Debian: apt-get install chromium chromium-driver; python3 dev.py test does it as root)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1800",
        "--autoplay-policy=no-user-gesture-required",
    ):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def page(browser, site):
    """The browser, signed out, with a helper to open a path of the hub."""
    browser.delete_all_cookies()

    def open_(path: str):
        browser.get(site["hub"].url + path)
        return browser

    return open_


def _artifacts() -> Path:
    folder = Path(os.environ.get("ZOO_TEST_ARTIFACTS") or REPO / ".cache" / "test-artifacts") / "hub-web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(driver, name: str) -> Path:
    path = _artifacts() / f"{name}.png"
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 5_000
    return path


def _texts(driver, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def _attrs(driver, css: str, name: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.get_attribute(name) for e in driver.find_elements(By.CSS_SELECTOR, css)]


def _navigate(driver, element) -> None:
    """Click ``element`` (a link or a submit button) and wait until the next page has replaced this one."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    element.click()

    def replaced(_driver) -> bool:
        try:
            old.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:  # Chrome may name a node of the replaced page this way mid-swap
            if "does not belong to the document" in (exc.msg or ""):
                return True
            raise
        return False

    WebDriverWait(driver, 10).until(replaced)
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _request(
    hub: HubServer, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(urlsplit(hub.url).netloc, timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    conn.close()
    return response


# ---------------------------------------------------------------------------------------------- index
def test_index_lists_models_and_searches_and_filters_by_author_and_tag(page, site):
    from selenium.webdriver.common.by import By

    driver = page("/")
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    assert set(_attrs(driver, "li.model", "data-repo")) == {MODEL, EVIL, OTHER}  # not the private one
    item = driver.find_element(By.CSS_SELECTOR, f'li.model[data-repo="{MODEL}"]')
    row = site["hub"].index.get(MODEL)
    assert {"CartPole-v1", "cleanrl", "zoo"} <= {e.text for e in item.find_elements(By.CSS_SELECTOR, ".chip")}
    assert item.find_element(By.CSS_SELECTOR, ".library").text == "cleanrl"
    assert item.find_element(By.TAG_NAME, "time").get_attribute("datetime") == row.last_modified
    _shot(driver, "index")

    box = driver.find_element(By.ID, "q")
    box.send_keys("CARTPOLE")
    _navigate(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button"))
    assert urlsplit(driver.current_url).query == "q=CARTPOLE&author=&tag=&sort=lastModified"
    assert _attrs(driver, "li.model", "data-repo") == [MODEL]
    assert "1 of 3 models match “CARTPOLE”" in driver.find_element(By.ID, "result-count").text
    _shot(driver, "index-search")

    _navigate(driver, driver.find_element(By.CSS_SELECTOR, "nav.facets a.chip[href='/?author=bob']"))
    assert _attrs(driver, "li.model", "data-repo") == [OTHER]
    _navigate(driver, driver.find_element(By.CSS_SELECTOR, "nav.facets a.chip[href='/?tag=hostile']"))
    assert _attrs(driver, "li.model", "data-repo") == [EVIL]
    driver = page("/?tag=reinforcement-learning&sort=id")
    assert _attrs(driver, "li.model", "data-repo") == [MODEL, OTHER]
    driver = page("/?q=no-such-model")
    assert _texts(driver, "li.empty") == ["No models match these filters."]


# ---------------------------------------------------------------------------------------------- model page
def test_model_page_shows_the_card_eval_files_commits_and_branches(page, site):
    from selenium.webdriver.common.by import By

    hub, push = site["hub"], site["push"]
    driver = page("/")
    _navigate(driver, driver.find_element(By.LINK_TEXT, MODEL))
    assert urlsplit(driver.current_url).path == f"/{MODEL}"
    assert driver.find_element(By.ID, "repo-title").text == MODEL
    card = driver.find_element(By.ID, "card").text
    assert "(CleanRL) DQN agent playing CartPole-v1" in card and "Reproduce the training" in card
    assert "library_name:" not in card  # the YAML header is metadata, not text

    head = hub.storage.resolve(MODEL, "main")
    shown = {e.get_attribute("data-path"): e for e in driver.find_elements(By.CSS_SELECTOR, "tr.file")}
    assert (
        set(shown)
        == set(head.files)
        >= {
            "replay.mp4",
            "eval.json",
            "README.md",
            "notes.txt",
            "images/learning_curve.png",
            "images/eval_returns.png",
        }
    )
    for path, row in shown.items():
        size = head.files[path].size
        assert row.get_attribute("data-size") == str(size)
        assert row.find_elements(By.TAG_NAME, "td")[1].text == human_size(size)
    href = shown["eval.json"].find_element(By.CSS_SELECTOR, "a.download").get_attribute("href")
    assert href == f"{hub.url}/{MODEL}/resolve/{head.id}/eval.json"
    assert _request(hub, "GET", urlsplit(href).path).body == (site["stage"] / "eval.json").read_bytes()

    evaluated = json.loads((site["stage"] / "eval.json").read_text())
    assert driver.find_element(By.ID, "verified").text == "verified"
    mean, std = evaluated["metrics"]["return_mean"], evaluated["metrics"]["return_std"]
    assert driver.find_element(By.ID, "eval-mean").text == f"{mean:.2f} ± {std:.2f}"
    assert driver.find_element(By.ID, "eval-episodes").text == str(evaluated["num_episodes"]) == "2"
    assert "mean_reward" in driver.find_element(By.ID, "card-results").text

    commits = _attrs(driver, "#history tr.commit", "data-commit")
    assert commits == [c.id for c in hub.storage.history(MODEL, head)]
    assert commits[:2] == [site["client"]["notes"]["oid"], push["commit"]] and len(commits) == 3
    assert _attrs(driver, "#refs a.branch", "data-branch") == ["experiment", "feature/x", "main"]
    assert _attrs(driver, "#refs a.tag", "data-tag") == ["v1.0"]
    assert _texts(driver, "#refs a.pr") == ["#1"]
    _shot(driver, "model")


def test_model_page_plays_the_replay_and_loads_the_card_images(page, site):
    from selenium.webdriver.common.by import By

    driver = page(f"/{MODEL}")
    video = driver.find_element(By.ID, "replay-video")
    commit = site["hub"].storage.resolve(MODEL, "main").id
    assert video.get_attribute("src") == f"{site['hub'].url}/{MODEL}/resolve/{commit}/replay.mp4"
    state = driver.execute_async_script("""
        const done = arguments[arguments.length - 1], v = document.getElementById('replay-video');
        const report = () => done({time: v.currentTime, ready: v.readyState, error: v.error && v.error.code,
                                   width: v.videoWidth, duration: v.duration});
        v.play().then(() => setTimeout(report, 800), e => done({failed: String(e)}));
    """)
    assert "failed" not in state, state
    assert state["error"] is None and state["ready"] >= 2 and state["time"] > 0 and state["width"] > 0, state
    images = driver.execute_script(
        "return [...document.querySelectorAll('#card img')].map(i => [i.alt, i.complete, i.naturalWidth,"
        " i.getAttribute('src')])"
    )
    assert [i[0] for i in images] == [
        "Learning curve: the episode returns logged in training",
        "Histogram of the eval episode returns",
    ]
    for alt, complete, width, src in images:
        assert complete and width > 0 and src.startswith(f"/{MODEL}/resolve/{commit}/images/"), (alt, src)
    _shot(driver, "model-video-playing")


def test_tree_pages_show_a_branch_a_tag_and_the_commit_list(page, site):
    from selenium.webdriver.common.by import By

    hub = site["hub"]
    driver = page(f"/{MODEL}/tree/v1.0")
    tagged = hub.storage.resolve(MODEL, "v1.0")
    assert tagged.id == site["push"]["commit"]
    assert "notes.txt" not in _attrs(driver, "tr.file", "data-path")  # the tag is before the notes commit
    assert driver.find_element(By.CSS_SELECTOR, "a.tag.active").text == "v1.0"
    driver = page(f"/{MODEL}/tree/refs%2Fpr%2F1")
    paths = _attrs(driver, "tr.file", "data-path")
    assert "notes.txt" in paths and not any(p.startswith("events.out") for p in paths)
    driver = page(f"/{MODEL}/commits/main")
    assert _attrs(driver, "tr.commit", "data-commit") == [
        c.id for c in hub.storage.history(MODEL, hub.storage.resolve(MODEL, "main"))
    ]
    assert page(f"/{MODEL}/tree/no-such-branch").find_element(By.TAG_NAME, "h1").text == "404 · Not found"


def test_the_file_and_folder_urls_huggingface_hub_makes_open_pages(page, site):
    from selenium.webdriver.common.by import By

    hub, web = site["hub"], site["client"]["web"]
    driver = page("")
    assert (
        web["pr_file"] == f"{hub.url}/{MODEL}/blob/refs/pr/1/notes.txt"
    )  # refs/pr/N unquoted, as the Hub has it
    driver.get(web["pr_file"])
    assert driver.find_element(By.ID, "blob-text").text == "trained on a laptop, 50k steps"
    assert driver.find_element(By.ID, "blob-title").text == "notes.txt"
    assert web["branch"] == f"{hub.url}/{MODEL}/tree/feature%2Fx"
    driver.get(web["branch"])
    assert driver.find_element(By.CSS_SELECTOR, "a.branch.active").text == "feature/x"
    driver.get(web["image"])
    image = driver.execute_script(
        "const i = document.querySelector('img.blob'); return [i.alt, i.naturalWidth]"
    )
    assert image == ["images/learning_curve.png", 700]
    driver.get(web["card"])
    assert driver.find_element(By.ID, "blob-text").text.startswith("---\nlibrary_name: cleanrl")
    driver = page(f"/{MODEL}/tree/main/images")
    assert _attrs(driver, "tr.file", "data-path") == ["images/eval_returns.png", "images/learning_curve.png"]
    _navigate(
        driver, driver.find_element(By.CSS_SELECTOR, 'tr.file[data-path="images/eval_returns.png"] a.view')
    )
    assert urlsplit(driver.current_url).path == f"/{MODEL}/blob/main/images/eval_returns.png"
    download = driver.find_element(By.ID, "download").get_attribute("href")
    commit = hub.storage.resolve(MODEL, "main")
    assert download == f"{hub.url}/{MODEL}/resolve/{commit.id}/images/eval_returns.png"
    assert (
        _request(hub, "GET", urlsplit(download).path).body
        == (site["stage"] / "images/eval_returns.png").read_bytes()
    )
    assert page(f"/{MODEL}/blob/main/nope.txt").find_element(By.TAG_NAME, "h1").text == "404 · Not found"
    assert page(f"/{MODEL}/tree/main/no-folder").find_element(By.TAG_NAME, "h1").text == "404 · Not found"


def test_the_commit_and_pr_urls_the_clients_print_open_their_pages(page, site):
    from selenium.webdriver.common.by import By

    hub, push, client = site["hub"], site["push"], site["client"]
    driver = page("")
    driver.get(push["commit_url"])  # what zoo push printed
    assert driver.find_element(By.ID, "commit-id").text == push["commit"]
    assert driver.find_element(By.ID, "commit-author").text == "alice"
    kinds = dict(
        zip(_attrs(driver, "tr.change", "data-path"), _attrs(driver, "tr.change", "data-kind"), strict=True)
    )
    assert set(kinds) == set(hub.storage.resolve(MODEL, push["commit"]).files) and set(kinds.values()) == {
        "added"
    }
    _navigate(driver, driver.find_element(By.ID, "parent-link"))
    assert driver.find_element(By.ID, "commit-id").text == hub.storage.resolve(MODEL, push["commit"]).parent

    driver.get(client["notes"]["url"])  # what HfApi.create_commit returned
    assert driver.find_element(By.ID, "commit-title").text == "Add notes"
    assert "Why: a reader asked." in driver.find_element(By.CSS_SELECTOR, "pre.message").text
    assert _attrs(driver, "tr.change", "data-kind") == ["added"]
    _shot(driver, "commit")

    assert client["pr"]["pr_url"] == f"{hub.url}/{MODEL}/discussions/1"
    driver.get(client["pr"]["pr_url"])
    assert driver.find_element(By.ID, "pr-title").text == "#1 Say how long it trained"
    assert _attrs(driver, "tr.commit", "data-commit") == [client["pr"]["oid"]]
    changed = dict(
        zip(_attrs(driver, "tr.change", "data-path"), _attrs(driver, "tr.change", "data-kind"), strict=True)
    )
    assert changed == {"events.out.tfevents.1796029650.vm.11207.0": "removed", "notes.txt": "changed"}
    _shot(driver, "pull-request")
    driver.get(client["pr"]["url"])
    assert driver.find_element(By.ID, "commit-id").text == client["pr"]["oid"]
    assert page(f"/{MODEL}/discussions/7").find_element(By.CSS_SELECTOR, ".error-message").text == (
        f"pull request #7 not found in {MODEL}"
    )


# ---------------------------------------------------------------------------------------------- private repos
def test_a_private_repo_shows_only_after_signing_in_and_the_token_never_shows(page, site):
    from selenium.webdriver.common.by import By

    hub, log = site["hub"], site["log"]
    hidden = page(f"/{PRIVATE}").page_source
    missing = page("/lab/no-such-repo").page_source
    assert hidden.replace("private-policy", "X") == missing.replace("no-such-repo", "X")  # the same 404
    assert "Secret policy card" not in hidden
    driver = page("/")
    assert PRIVATE not in _attrs(driver, "li.model", "data-repo")

    driver = page(f"/{PRIVATE}")
    _navigate(driver, driver.find_element(By.LINK_TEXT, "sign in"))
    assert urlsplit(driver.current_url).path == "/login"
    driver.find_element(By.ID, "token").send_keys("hf_notAtokenOfThisServer0123456789")
    _navigate(driver, driver.find_element(By.ID, "login-submit"))
    assert driver.find_element(By.ID, "login-error").text == "That token is not valid on this server."
    assert "hf_notAtoken" not in driver.page_source
    driver.find_element(By.ID, "token").send_keys(ALICE)
    _shot(driver, "login")
    _navigate(driver, driver.find_element(By.ID, "login-submit"))

    assert urlsplit(driver.current_url).path == f"/{PRIVATE}"  # back where the sign-in started
    assert "Secret policy card" in driver.find_element(By.ID, "card").text
    image = driver.execute_script(
        "const i = document.querySelector('#card img'); return [i.complete, i.naturalWidth]"
    )
    assert image == [True, 700]  # /resolve of a private file answers the session cookie too
    assert "Signed in as alice" in driver.find_element(By.CSS_SELECTOR, "header .account").text
    _shot(driver, "private-model")
    (cookie,) = driver.get_cookies()
    assert cookie["name"] == "zoo_session" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/" and ALICE not in cookie["value"]
    driver = page("")  # page() drops cookies: open the index in the signed-in browser instead
    driver.add_cookie(cookie)
    driver.get(hub.url + "/")
    assert PRIVATE in _attrs(driver, "li.model", "data-repo")
    assert driver.find_element(By.CSS_SELECTOR, f'li.model[data-repo="{PRIVATE}"] .badge').text == "private"
    _navigate(driver, driver.find_element(By.CSS_SELECTOR, "header form button"))  # sign out
    assert PRIVATE not in _attrs(driver, "li.model", "data-repo")
    assert page(f"/{PRIVATE}").find_element(By.TAG_NAME, "h1").text == "404 · Not found"

    for secret in (ALICE, BOB):
        assert secret not in log.getvalue() and secret not in driver.current_url
    assert "POST /login 303" in log.getvalue() and "POST /login 401" in log.getvalue()


def test_login_redirects_only_within_the_site_and_refuses_other_sites_forms(site):
    hub = site["hub"]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for target, expected in (
        ("/alice/cartpole-dqn?x=1", "/alice/cartpole-dqn?x=1"),
        ("//evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
    ):
        response = _request(hub, "POST", "/login", urlencode({"token": BOB, "next": target}).encode(), form)
        assert response.status == 303 and response.getheader("Location") == expected, target
        cookie = response.getheader("Set-Cookie")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and BOB not in cookie
    crossing = {**form, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    response = _request(hub, "POST", "/login", urlencode({"token": BOB}).encode(), crossing)
    assert response.status == 403 and response.getheader("Set-Cookie") is None
    assert b"only be sent from this server" in response.body and BOB.encode() not in response.body
    bob = _request(hub, "POST", "/login", urlencode({"token": BOB}).encode(), form).getheader("Set-Cookie")
    session = bob.split(";", 1)[0]
    assert (
        _request(hub, "GET", f"/{PRIVATE}", headers={"Cookie": session}).status == 404
    )  # bob may not read lab


# ---------------------------------------------------------------------------------------------- hostile card
def test_a_hostile_card_runs_no_script_and_keeps_its_harmless_parts(page, site):
    from selenium.webdriver.common.by import By

    driver = page(f"/{EVIL}")
    assert driver.title == f"{EVIL} · zoo hub"
    assert driver.execute_script("return window.pwned === undefined && document.scripts.length === 0")
    card = driver.find_element(By.ID, "card")
    card.find_element(By.XPATH, ".//div[contains(., 'overlay')]").click()  # an onclick would run here
    links = driver.execute_script(
        "return [...document.querySelectorAll('#card a')].map(a => a.getAttribute('href'))"
    )
    assert not any(h and h.lower().startswith("javascript") for h in links), links
    driver.find_element(By.PARTIAL_LINK_TEXT, "a javascript: link").click()
    assert driver.title == f"{EVIL} · zoo hub" and driver.execute_script("return window.pwned === undefined")
    handlers = driver.execute_script("""
        return [...document.querySelectorAll('#card *:not(#card-title)')].flatMap(e => [...e.attributes].map(a => a.name))
            .filter(n => n.startsWith('on') || n === 'style' || n === 'id');""")
    assert handlers == []
    assert driver.find_elements(By.CSS_SELECTOR, "#card iframe, #card svg, #card script") == []
    commit = site["hub"].storage.resolve(EVIL, "main").id
    image = driver.execute_script(
        "const i = document.querySelector('#card img[alt=\"curve.png\"]');"
        " return i && [i.complete, i.naturalWidth, i.getAttribute('src')]"
    )
    assert image == [True, 700, f"/{EVIL}/resolve/{commit}/pics/curve.png"]  # alt from the file name
    notes = driver.find_element(By.LINK_TEXT, "the notes").get_attribute("href")
    assert notes == f"{site['hub'].url}/{EVIL}/resolve/{commit}/notes.txt"
    outside = driver.find_element(By.LINK_TEXT, "a site")
    assert outside.get_attribute("href") == "https://example.org/" and "nofollow" in outside.get_attribute(
        "rel"
    )
    response = _request(site["hub"], "GET", f"/{EVIL}")
    assert "script-src" not in response.getheader("Content-Security-Policy")  # default-src 'none' covers it
    assert response.getheader("Content-Security-Policy").startswith("default-src 'none'")
    _shot(driver, "hostile-card")


# ---------------------------------------------------------------------------------------------- leaderboard
def test_leaderboard_pages_rank_verified_scores_before_self_reported_ones(page, site):
    from selenium.webdriver.common.by import By

    hub = site["hub"]
    driver = page("/leaderboard")
    assert _texts(driver, "#env-ids a") == ["CartPole-v1", "Pendulum-v1"] == scores.env_ids(hub, None)
    _navigate(driver, driver.find_element(By.LINK_TEXT, "CartPole-v1"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
    board = scores.board(hub, "CartPole-v1", None)
    assert (
        [(r.get_attribute("data-repo"), r.get_attribute("data-verified")) for r in rows]
        == [(b.repo_id, "true" if b.verified else "false") for b in board]
        == [(MODEL, "true")]
    )
    assert rows[0].get_attribute("data-rank") == "1" and "verified" in rows[0].text
    _shot(driver, "leaderboard")
    driver = page("/leaderboard/Pendulum-v1")
    (row,) = driver.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
    assert (
        row.get_attribute("data-repo") == OTHER
        and "self-reported" in row.text
        and "-150.00 ± 10.00" in row.text
    )
    assert page("/leaderboard/NoSuchEnv-v0").find_element(By.TAG_NAME, "h1").text == "404 · Not found"


# ---------------------------------------------------------------------------------------------- a11y, errors
@pytest.mark.parametrize(
    "path", ["/", f"/{MODEL}", "/leaderboard/CartPole-v1", "/login", f"/{MODEL}/commits/main"]
)
def test_pages_pass_axe_core_without_serious_or_critical_violations(page, path):
    from axe_core_python.selenium import Axe

    driver = page(path)
    results = Axe().run(driver)
    bad = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == [], bad
    checked = {rule["id"] for rule in results["passes"]}
    assert {"html-has-lang", "color-contrast", "landmark-one-main", "region"} <= checked


def test_page_errors_are_html_and_the_api_keeps_its_json(site):
    hub = site["hub"]
    html = {"Accept": "text/html,application/xhtml+xml"}
    for path in ("/alice/no-such-repo", "/no/such/page/here", f"/{MODEL}/commit/{'0' * 40}"):
        response = _request(hub, "GET", path, headers=html)
        assert response.status == 404 and response.getheader("Content-Type").startswith("text/html"), path
        assert b"<main" in response.body and b"404" in response.body
    api = _request(hub, "GET", "/api/models/alice/no-such-repo")
    assert (
        api.status == 404
        and json.loads(api.body)["error"]
        and api.getheader("X-Error-Code") == "RepoNotFound"
    )
    plain = _request(hub, "GET", "/no/such/page/here")
    assert plain.status == 404 and json.loads(plain.body) == {"error": "no route /no/such/page/here"}
    assert _request(hub, "GET", "/static/zoo.css").getheader("Content-Type") == "text/css; charset=utf-8"
    assert _request(hub, "GET", "/static/../pages.py", headers=html).status == 404


def test_an_open_server_shows_everything_and_needs_no_sign_in(tmp_path):
    """Without a token file every request acts as ``anonymous``, who may read every repo, private ones too."""
    with HubServer(tmp_path / "root").start() as hub:
        run_client(
            hub,
            """
            api.create_repo("team/secret", private=True)
            api.upload_file(path_or_fileobj=b"---\\ntags: [demo]\\n---\\n# Team card\\n", path_in_repo="README.md",
                            repo_id="team/secret")
        """,
            tmp_path,
        )
        html = {"Accept": "text/html"}
        index = _request(hub, "GET", "/", headers=html).body.decode()
        assert 'data-repo="team/secret"' in index and "open server: no sign-in needed" in index
        assert "Team card" in _request(hub, "GET", "/team/secret", headers=html).body.decode()
        assert "nothing to sign in to" in _request(hub, "GET", "/login", headers=html).body.decode()


def test_behind_a_tls_proxy_the_session_cookie_is_secure_and_the_public_origin_may_post(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n")
    with HubServer(tmp_path / "root", token_file=tokens, public_url="https://hub.lab.example").start() as hub:
        form = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Origin": "https://hub.lab.example",
            "Sec-Fetch-Site": "same-origin",
        }
        response = _request(hub, "POST", "/login", urlencode({"token": ALICE, "next": "/"}).encode(), form)
        assert response.status == 303 and "; Secure" in response.getheader("Set-Cookie")
        other = _request(
            hub,
            "POST",
            "/login",
            urlencode({"token": ALICE}).encode(),
            {**form, "Origin": "https://hub.evil.example"},
        )
        assert other.status == 403
