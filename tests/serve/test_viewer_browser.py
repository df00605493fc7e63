"""The trace viewer end to end: uvicorn on a loopback port, headless Chromium driving the pages.

Needs the Debian packages `chromium` and `chromium-driver` (`make test` installs them);
without them the test fails, on purpose, instead of skipping.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from posttrain.serve.viewer import create_viewer
from posttrain.store.run_dir import RunDir
from posttrain.store.traces import TraceStore
from tests.serve.test_viewer import ADD, AGENT, agent_turns, rollout

# Chromium must talk to nothing but the viewer: no name resolves (so no Google service is
# reached), and the background services that would try are off.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--no-first-run",
    "--no-pings",
    "--window-size=1280,900",
]


@pytest.fixture
def viewer_url(tmp_path: Path) -> Iterator[str]:
    run = RunDir.create(tmp_path, name="run")
    with TraceStore(run.traces_path) as traces:
        traces.record(
            [
                rollout("add-ok", ADD, True, "exact match", 0),
                rollout("agent-bad", AGENT, False, "balance is wrong", 1, turns=agent_turns()),
            ],
            stage="grpo",
        )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_viewer(run.path), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the viewer did not start"
        time.sleep(0.02)  # a poll with a deadline: uvicorn offers no start event
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def headless_chromium(profile: Path) -> Iterator[webdriver.Chrome]:
    """Chromium driven by chromedriver; fails (never skips) when either is not installed."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.fail(
            f"headless Chromium is missing (chromium: {chromium}, chromedriver: {chromedriver}); "
            "`make test` installs them (Debian packages chromium, chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in [*CHROMIUM_ARGS, f"--user-data-dir={profile}"]:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_failed_filter_then_detail_page_in_chromium(
    viewer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SE_AVOID_STATS", "true")  # in case Selenium Manager ever runs
    with headless_chromium(tmp_path / "chromium-profile") as browser:
        wait = WebDriverWait(browser, 20)
        browser.get(viewer_url + "/")
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr.rollout")) == 2

        Select(browser.find_element(By.ID, "passed")).select_by_visible_text("failed")
        browser.find_element(By.ID, "apply").click()
        wait.until(lambda d: "passed=0" in d.current_url)
        reasons = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "td.reason")]
        assert reasons == ["balance is wrong"]

        browser.find_element(By.CSS_SELECTOR, 'tr[data-id="agent-bad"] a.open').click()
        wait.until(lambda d: d.find_elements(By.ID, "rollout-id"))
        assert browser.find_element(By.CSS_SELECTOR, ".tool-call .tool-name").text == "transfer"
        observation = browser.find_element(By.CSS_SELECTOR, ".message.observation pre").text
        assert observation == "OBS: transfer of 30 to alice queued"

        browser.find_element(By.ID, "back").click()
        wait.until(lambda d: d.find_elements(By.ID, "filters"))
        assert "passed=0" in browser.current_url
