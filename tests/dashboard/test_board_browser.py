"""Dashboards in headless Chromium, over the real app and real Cassandra: build a dashboard of
three panels, change its range and server filter, export it, import it under another name,
open its share link signed out; a revoked link answers 404."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from apm.query import WindowResult
from tests.dashboard.conftest import TOKEN
from tests.dashboard.test_browser import _pick, _radio, _text, _type

pytestmark = pytest.mark.e2e

Wait = Callable[..., Any]
_PANELS = "return Array.from(document.querySelectorAll('#d-grid .d-panel')).map(e => e.id);"
_NOTES = """return Array.from(document.querySelectorAll('#d-grid .d-panel')).map(
  e => [e.id, e.querySelector('.d-notes').innerText]);"""
_SHARED_TRACES = """const out = {};
for (const el of document.querySelectorAll('.plot.js-plotly-plot')) {
  out[el.id] = (el.data || []).map(t => t.type); }
return out;"""


def _click(chrome: Any, element_id: str) -> None:
    chrome.find_element(By.ID, element_id).click()


def _click_panel(chrome: Any, kind: str, panel: str) -> None:
    """A panel's button, found and clicked in one script (the grid re-renders on saves)."""
    chrome.execute_script(
        "for (const b of document.querySelectorAll('#d-grid button')) {"
        "  const id = JSON.parse(b.id);"
        "  if (id.type === arguments[0] && id.panel === arguments[1]) { b.click(); return; } }",
        kind,
        panel,
    )


def _add_panel(chrome: Any, wait: Wait, title: str, query: str, chart: str, count: int) -> None:
    _type(chrome, "d-p-title", title)
    _pick(chrome, wait, "d-p-queries", query)
    _radio(chrome, "d-p-chart", chart)
    _click(chrome, "d-p-save")
    wait(lambda d: len(d.execute_script(_PANELS)) == count)


def test_build_filter_export_import_share_and_revoke_a_dashboard(
    chrome: Any, login: Any, wait: Wait, repo: Any, served: Any
) -> None:
    tag = uuid.uuid4().hex[:6]
    now = time.time()
    web, db = f"web{tag}", f"db{tag}"
    cpu = repo.save_query(f"FROM {web}-* SELECT cpu.{tag} WINDOW 10s COMPUTE avg, max")
    mem = repo.save_query(f"FROM {web}-* SELECT mem.{tag} WINDOW 10s COMPUTE p99")
    disk = repo.save_query(f"FROM {db}-* SELECT disk.{tag} WINDOW 10s COMPUTE max")
    start = (now // 10) * 10 - 3000
    for q in (cpu, mem, disk):
        fns = [f.key for f in q.query.functions]
        repo.upsert_results(
            WindowResult(q.id, start + i * 10, 10, {k: float(i) for k in fns}, 3, now)
            for i in range(300)
        )
    repo.touch_servers({f"{web}-1": now, f"{web}-2": now, f"{db}-1": now})

    login(path="/dashboards")
    name = f"fleet {tag}"
    _type(chrome, "l-name", name)
    _click(chrome, "l-create")
    link = wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#l-ok a"))[0]
    board_id = link.get_attribute("href").split("id=")[1]
    link.click()
    wait(lambda d: d.find_elements(By.ID, "d-empty"))
    assert "no panels yet" in _text(chrome, "d-empty")
    _add_panel(chrome, wait, "CPU", cpu.text, "lines", 1)
    _add_panel(chrome, wait, "Memory", mem.text, "stat", 2)
    _add_panel(chrome, wait, "Disks", disk.text, "table", 3)
    wait(lambda d: "3 panels" in _text(d, "d-status"))
    stored = _stored(served, board_id)  # what the page saved
    assert [p["title"] for p in stored["panels"]] == ["CPU", "Memory", "Disks"]
    assert [p["chart"] for p in stored["panels"]] == ["lines", "stat", "table"]

    # The range: saved with the dashboard, every panel redrawn over it.
    _radio(chrome, "d-range", "24h")
    wait(lambda d: _stored(served, board_id)["time_range"] == "24h")
    # The server filter: the db query's panel is not drawn, and says why.
    field = chrome.find_element(By.ID, "d-filter")
    field.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    field.send_keys(f"{web}-*", Keys.ENTER)
    wait(lambda d: _stored(served, board_id)["server_filter"] == f"{web}-*")
    notes = dict(
        wait(
            lambda d: (n := d.execute_script(_NOTES)) and "not drawn" in " ".join(map(str, n)) and n
        )
    )
    disks = next(v for k, v in notes.items() if k.endswith(stored["panels"][2]["id"]))
    assert f"none of its 1 servers matches '{web}-*'; not drawn" in disks
    cpu_notes = next(v for k, v in notes.items() if k.endswith(stored["panels"][0]["id"]))
    assert f"all 2 of its servers match '{web}-*'" in cpu_notes
    if shot := os.environ.get("APM_TEST_DASHBOARD_PNG"):
        chrome.save_screenshot(shot)

    # Export through the page's own link, import it under another name.
    exported = chrome.execute_script(
        "return fetch(document.getElementById('d-export').href).then(r => r.json());"
    )
    assert exported["server_filter"] == f"{web}-*" and len(exported["panels"]) == 3
    chrome.find_element(By.ID, "nav-dashboards").click()
    wait(lambda d: d.find_elements(By.ID, "l-import-json"))
    _type(chrome, "l-import-name", f"imported {tag}")
    chrome.find_element(By.ID, "l-import-json").send_keys(json.dumps(exported))
    _click(chrome, "l-import")
    assert "with 3 panels" in wait(lambda d: _text(d, "l-ok"))
    assert f"imported {tag}" in _text(chrome, "l-table")

    # Share, then open the link signed out: that dashboard only, drawn.
    login(path=f"/dashboard?id={board_id}")
    wait(lambda d: d.find_elements(By.ID, "d-share-btn"))
    _click(chrome, "d-share-btn")
    url = wait(lambda d: d.find_elements(By.ID, "d-share-url"))[0].get_attribute("href")
    chrome.delete_all_cookies()
    chrome.get(url)
    wait(lambda d: d.execute_script("return document.body.dataset.drawn"))
    assert _text(chrome, "s-name") == name and not chrome.find_elements(By.ID, "nav-dashboards")
    traces = wait(lambda d: (t := d.execute_script(_SHARED_TRACES)) and len(t) == 3 and t)
    if shot:
        chrome.save_screenshot(shot.replace(".png", "-shared.png"))
    assert sorted(t[0] if t else "" for t in traces.values()) == ["", "indicator", "scatter"]
    # The signed-out browser still reaches nothing else.
    assert chrome.execute_script("return fetch('/api/dashboards').then(r => r.status);") == 401

    # Revoked from the page: the same link answers 404 and shows nothing of the dashboard.
    login(path=f"/dashboard?id={board_id}")
    wait(lambda d: d.find_elements(By.ID, "d-revoke"))
    _click(chrome, "d-revoke")
    wait(lambda d: "Revoked" in _text(d, "d-share"))
    replay = httpx.get(url, timeout=30)
    assert replay.status_code == 404 and name not in replay.text

    # Reorder, edit and remove panels: each saved as the page shows it.
    ids = [p["id"] for p in stored["panels"]]
    _click_panel(chrome, "d-up", ids[2])
    wait(
        lambda d: [p["id"] for p in _stored(served, board_id)["panels"]] == [ids[0], ids[2], ids[1]]
    )
    _click_panel(chrome, "d-edit", ids[0])
    wait(lambda d: d.find_element(By.ID, "d-p-title").get_attribute("value") == "CPU")
    _type(chrome, "d-p-title", "Fleet CPU")
    _click(chrome, "d-p-save")
    wait(lambda d: _stored(served, board_id)["panels"][0]["title"] == "Fleet CPU")
    _click_panel(chrome, "d-remove", ids[1])
    wait(lambda d: len(d.execute_script(_PANELS)) == 2)
    assert [p["id"] for p in _stored(served, board_id)["panels"]] == [ids[0], ids[2]]


def _stored(served: Any, board_id: str) -> dict[str, Any]:
    return httpx.get(
        f"{served.url}/api/dashboards/{board_id}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    ).json()


_FIGURES = """const out = {};
for (const p of document.querySelectorAll('#d-grid .d-panel')) {
  const g = p.querySelector('.js-plotly-plot');
  out[p.id] = (g && g.data || []).map(t => t.type === 'table' ? t.cells.values : t.name);
}
return out;"""


def _panel(figures: dict[str, Any], panel_id: str) -> Any:
    return next(v for k, v in figures.items() if k.endswith(panel_id))


def test_per_server_lines_and_a_top_n_table_narrowed_by_the_server_filter(
    chrome: Any, login: Any, wait: Wait, repo: Any, api: Any, served: Any
) -> None:
    from apm.ranking import rank

    tag = uuid.uuid4().hex[:6]
    split = repo.save_query(f"FROM * SELECT cpu.{tag} WINDOW 10s COMPUTE avg BY server")
    top = repo.save_query(
        f"FROM * SELECT cpu.{tag} WINDOW 10s COMPUTE avg, max BY server TOP 3 BY avg"
    )
    web = [f"web{tag}-{i}" for i in range(3)]
    servers = [*web, f"db{tag}-1", f"db{tag}-2"]
    now = time.time()
    starts = [(now // 10) * 10 - 10 * i for i in range(1, 31)]
    for q in (split, top):
        rows = [
            WindowResult(q.id, at, 10, {"avg": 10.0 * k + i, "max": 99.0}, 2, now, server)
            for i, at in enumerate(starts)
            for k, server in enumerate(servers)
        ]
        repo.upsert_results(rows)
    newest = [r for r in rows if r.window_start == starts[0]]  # the top query's
    repo.upsert_ranked(rank(top.query, newest))

    body = {
        "name": f"servers {tag}",
        "panels": [
            {"title": "CPU per server", "queries": [split.id], "chart": "lines"},
            {"title": "Top 3", "queries": [top.id], "chart": "table"},
        ],
    }
    board = api.post("/api/dashboards", json=body).json()
    lines_id, table_id = (p["id"] for p in board["panels"])
    login(path=f"/dashboard?id={board['id']}")

    def drawn(d: Any) -> Any:
        figures = d.execute_script(_FIGURES)
        return figures if len(figures) == 2 and all(figures.values()) else None

    figures = wait(drawn)
    # One line per server, the busiest (highest avg in the newest closed window) first.
    assert _panel(figures, lines_id) == list(reversed(servers))
    table = dict(zip(["query", "rank", "server"], _panel(figures, table_id)[0][:3], strict=True))
    assert table["rank"] == [1, 2, 3, 4]
    assert table["server"] == [f"db{tag}-2", f"db{tag}-1", web[2], "(others)"]
    notes = dict(chrome.execute_script(_NOTES))
    assert "all 5 servers drawn" in _panel(notes, lines_id)
    assert "(others) folds the servers after the first 3" in _panel(notes, table_id)

    # The server filter narrows the lines to the web servers, and the table to its web rows.
    field = chrome.find_element(By.ID, "d-filter")
    field.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    field.send_keys(f"web{tag}-*", Keys.ENTER)
    narrowed = wait(lambda d: (f := drawn(d)) and len(_panel(f, lines_id)) == 3 and f)
    assert _panel(narrowed, lines_id) == list(reversed(web))
    assert _panel(narrowed, table_id)[0][2] == [web[2], "(others)"]
    notes = dict(chrome.execute_script(_NOTES))
    assert f"server filter 'web{tag}-*': 3 of its 5 servers match" in _panel(notes, lines_id)
    assert "1 of the 3 ranked servers match" in _panel(notes, table_id)
    if shot := os.environ.get("APM_TEST_DASHBOARD_PNG"):
        chrome.save_screenshot(shot.replace(".png", "-servers.png"))

    # The share link, signed out: the same servers under the saved filter, with its notes.
    url = api.post(f"/api/dashboards/{board['id']}/share").json()["url"]
    chrome.delete_all_cookies()
    chrome.get(served.url + url)
    names = f"return (document.getElementById('s-plot-{lines_id}').data || []).map(t => t.name);"
    assert wait(lambda d: d.execute_script(names)) == list(reversed(web))
    assert "3 of its 5 servers match" in _text(chrome, f"s-notes-{lines_id}")
    # The chart page draws the same per-server lines and says which.
    login(path=f"/chart?q={split.id}")
    wait(lambda d: "all 5 servers drawn" in _text(d, "c-servers"))
    # The builder composes the split: a ranking's clause shows in its preview.
    login(path="/")
    wait(lambda d: d.find_elements(By.ID, "b-split"))
    _radio(chrome, "b-split", "per server, and rank the highest n (TOP n BY f)")
    wait(lambda d: _text(d, "b-preview").endswith("BY server TOP 10 BY avg"))
