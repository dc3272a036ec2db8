"""Headless Chromium (Debian's chromium and chromium-driver) driven by Selenium, for the report's browser tests
and the README's screenshot: `python -m tests.browser.driver REPORT.html OUT.png [#fragment]`.

Chromium starts with a fresh profile and without its background services (they would try the network), and
logs the browser console and the DevTools network events, so a test can read both."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)
INSTALL = "apt-get install chromium chromium-driver"


def find(names) -> str | None:
    return next((path for name in names if (path := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    if find(CHROMIUM_NAMES) is None or find(DRIVER_NAMES) is None:
        return f"Chromium or ChromeDriver absent ({INSTALL})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make install)"
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 900):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="ccq-eval-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = find(CHROMIUM_NAMES)
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-extensions", "--disable-default-apps", f"--user-data-dir={profile}",
                     f"--window-size={width},{height}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        driver = webdriver.Chrome(service=Service(find(DRIVER_NAMES), log_output=os.devnull), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for since the last call (DevTools' Network.requestWillBeSent events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def screenshot(report: Path, out: Path, fragment: str = "#tables") -> Path:
    with chromium() as driver:
        driver.get(report.resolve().as_uri() + fragment)
        driver.save_screenshot(str(out))
    return out


if __name__ == "__main__":
    fragment = sys.argv[3] if len(sys.argv) > 3 else "#tables"
    print(screenshot(Path(sys.argv[1]), Path(sys.argv[2]), fragment))
