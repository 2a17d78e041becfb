"""The one headless Chromium (Debian's ``chromium`` and ``chromium-driver``, `make browser`)
that the dashboard benchmark, the README's screenshots and the browser tests drive."""

from __future__ import annotations

import shutil
from typing import Any

__all__ = ["headless_chromium"]

_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def headless_chromium(profile: str, size: str = "1400,950", *extra: str) -> Any:
    """A Selenium Chrome driver on Chromium with its own ``profile`` directory, a window of
    ``size`` (``width,height``) and any ``extra`` switches. Raises RuntimeError naming
    `make browser` when Chromium or its driver is missing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        raise RuntimeError("Debian's chromium and chromium-driver are required: `make browser`")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (*_ARGS, f"--window-size={size}", *extra, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options)
