"""Screenshots of a running dashboard, for the README: ``python -m bench.screenshots``.

Points headless Chromium at a live platform (``make run`` by default: the token is read from
``var/run/dashboard/dashboard.token``) and saves its queries, chart, health and alerts pages
under ``docs/screenshots/live-*.png``, so the README shows what the real pipeline produced.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from pathlib import Path

from apm.settings import PROJECT_ROOT
from bench.browser import headless_chromium
from bench.dashboard import SHOTS

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    parser = argparse.ArgumentParser(prog="python -m bench.screenshots")
    parser.add_argument("--url", default="http://127.0.0.1:8050")
    parser.add_argument(
        "--token-file", default=str(PROJECT_ROOT / "var/run/dashboard/dashboard.token")
    )
    parser.add_argument("--range", default="15m", choices=["15m", "1h", "6h", "24h"])
    args = parser.parse_args(argv)
    token = Path(args.token_file).read_text().strip()
    request = urllib.request.Request(
        f"{args.url}/api/queries", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        queries = json.loads(reply.read())
    if not queries:
        raise SystemExit("no stored queries to chart")
    shown = queries[0]["id"]
    driver = headless_chromium(
        tempfile.mkdtemp(prefix="apm-shots-"), "1400,950", "--hide-scrollbars"
    )
    wait = WebDriverWait(driver, 60)
    try:
        driver.get(f"{args.url}/login")
        driver.find_element(By.ID, "password").send_keys(token)
        driver.find_element(By.ID, "login-submit").click()
        wait.until(lambda d: d.find_elements(By.ID, "q-table"))
        SHOTS.mkdir(parents=True, exist_ok=True)
        time.sleep(2)
        driver.save_screenshot(str(SHOTS / "live-queries.png"))
        driver.get(f"{args.url}/chart?q={shown}")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#c-range input"))
        driver.find_element(By.CSS_SELECTOR, f"#c-range input[value='{args.range}']").click()
        time.sleep(6)
        driver.save_screenshot(str(SHOTS / "live-chart.png"))
        driver.get(f"{args.url}/health")
        wait.until(lambda d: d.find_elements(By.ID, "h-lag"))
        time.sleep(12)  # two scrapes turn the ingest's counters into rates
        driver.save_screenshot(str(SHOTS / "live-health.png"))
        driver.get(f"{args.url}/alerts")
        wait.until(lambda d: d.find_elements(By.ID, "al-body"))
        time.sleep(4)
        driver.save_screenshot(str(SHOTS / "live-alerts.png"))
        if board := _example_board(args.url, token):
            # make run's example dashboard: the fleet per server and its top-10 table.
            driver.set_window_size(1400, 1700)
            driver.get(f"{args.url}/dashboard?id={board}")
            wait.until(lambda d: d.find_elements(By.ID, "d-range"))
            time.sleep(8)
            driver.save_screenshot(str(SHOTS / "live-dashboard.png"))
    finally:
        driver.quit()
    print(
        f"saved {SHOTS}/live-queries.png, live-chart.png, live-health.png, live-alerts.png "
        "and live-dashboard.png (make run's example dashboard, when there is one)"
    )
    return 0


def _example_board(url: str, token: str) -> str | None:
    """The id of the first saved dashboard (make run creates its example when none exists)."""
    request = urllib.request.Request(
        f"{url}/api/dashboards", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        boards = json.loads(reply.read())
    items = boards.get("dashboards", boards) if isinstance(boards, dict) else boards
    return str(items[0]["id"]) if items else None


if __name__ == "__main__":
    raise SystemExit(main())
