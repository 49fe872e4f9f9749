"""`umni view` in a real headless chromium: tables, filters, search, case detail with transcript and
raw failures, full-size images, side-by-side comparison, a 1,000-case run, and the README's
screenshots."""

import json

import pytest
from PIL import Image

pytest.importorskip("selenium", reason="selenium is not installed: pip install 'umni[test]'")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from umni.reporting.viewer import ViewerData  # noqa: E402

from .conftest import shots, synthesise_thousand  # noqa: E402


def open_page(browser, url, css):
    browser.get(url)
    shots.wait_ready(browser, css)


def listed(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#case-list li")


def count_text(browser):
    return browser.find_element(By.ID, "count").text


def test_screenshots_of_the_viewer_and_every_leaderboard(demo_runs, browser, tmp_path):
    made = shots.take_screenshots(tmp_path / "shots", demo_runs.parent)
    names = sorted(p.name for p in made)
    assert names == sorted([f"leaderboard-{p}.png" for p in shots.PROTOCOLS] + ["viewer-cases.png", "viewer-case.png", "viewer-compare.png", "viewer-failure.png"])
    for path in made:
        with Image.open(path) as image:
            assert image.width == 1400 and image.height >= 500
            low, high = image.convert("L").getextrema()
            assert low < 100 and high > 200  # text on a light page, not a blank or black capture


def test_tables_show_each_protocol_in_its_layout_with_coverage(demo_runs, browser, serve):
    base = serve([demo_runs])
    open_page(browser, base + "#tables/aegis", "section#protocol-aegis table.lb")
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "section#protocol-aegis th")]
    assert headers[:6] == ["run", "task", "STEM", "Humanities", "Daily life", "Overall"] and "coverage" in headers
    assert not browser.find_elements(By.CSS_SELECTOR, "section#protocol-genius")
    open_page(browser, base + "#tables/umnibench", "section#protocol-umnibench table.lb")
    first = browser.find_element(By.CSS_SELECTOR, "section#protocol-umnibench table.lb")
    text = first.text
    assert "(54/54)" in text and "[" in text  # coverage and the bootstrap interval beside Overall
    assert browser.find_elements(By.CSS_SELECTOR, "section#protocol-umnibench td.incomplete")  # the failing run is marked


def test_filters_search_detail_transcript_and_failures(demo_runs, browser, serve):
    data = ViewerData([demo_runs])
    statuses = [c[3] for c in data.cases]
    base = serve([demo_runs])
    open_page(browser, base + "#cases", "#case-list li")
    assert count_text(browser) == f"{len(data.cases)} of {len(data.cases)} cases"

    browser.find_element(By.ID, "f-failed").click()
    assert count_text(browser).startswith(f"{statuses.count('failed')} of")
    assert statuses.count("failed") > 0
    assert {li.find_element(By.CSS_SELECTOR, ".badge").text for li in listed(browser)} == {"failed"}
    listed(browser)[0].click()
    shots.wait_ready(browser, "#failures .failure")
    failure_text = browser.find_element(By.ID, "failures").text
    run_id, case_id = int(listed(browser)[0].get_attribute("data-run")), listed(browser)[0].get_attribute("data-case")
    record = data.runs[run_id].records[case_id]
    message = next(n["failure"]["message"] for n in record["nodes"].values() if "failure" in n)
    assert message in failure_text
    browser.find_element(By.ID, "f-failed").click()

    browser.find_element(By.ID, "f-wrong").click()
    assert {li.find_element(By.CSS_SELECTOR, ".badge").text for li in listed(browser)} == {"wrong"}
    browser.find_element(By.ID, "f-wrong").click()

    Select(browser.find_element(By.ID, "f-category")).select_by_visible_text("Spatial")
    assert listed(browser) and all("Spatial" in li.text for li in listed(browser))
    Select(browser.find_element(By.ID, "f-category")).select_by_index(0)

    genius = next(r for r in data.index()["runs"] if r["protocol"] == "genius")
    Select(browser.find_element(By.ID, "f-run")).select_by_value(str(genius["id"]))
    assert {li.get_attribute("data-protocol") for li in listed(browser)} == {"genius"}
    Select(browser.find_element(By.ID, "f-run")).select_by_index(0)

    search = browser.find_element(By.ID, "search")
    search.send_keys("implicit_pattern/001")
    assert [li.get_attribute("data-case") for li in listed(browser)] == ["implicit_pattern/001"]
    listed(browser)[0].click()
    shots.wait_ready(browser, "#detail .transcript details.node")
    # the judge's reply and the reflection round are both in the transcript
    record = data.runs[genius["id"]].records["implicit_pattern/001"]
    judge = next(e for e in record["transcript"] if e["kind"] == "judge" and e.get("reply", {}).get("text"))
    node = browser.find_element(By.CSS_SELECTOR, f"details.node[data-node='{judge['node']}']")
    assert judge["reply"]["text"].strip().splitlines()[0] in node.text
    rounds = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#detail .round")]
    assert "round0" in rounds and "round1" in rounds
    prompt_text = next(p["text"] for p in judge["prompt"] if "text" in p)
    assert prompt_text.strip().splitlines()[0] in node.text

    # a thumbnail opens the full-size image
    thumb = browser.find_element(By.CSS_SELECTOR, "#detail .panel img.thumb")
    thumb.click()
    full = browser.find_element(By.ID, "overlay-img")
    shots.wait_ready(browser, "#overlay:not([hidden])")
    WebDriverWait(browser, 20).until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", full))
    assert browser.execute_script("return arguments[0].naturalWidth", full) >= browser.execute_script("return arguments[0].naturalWidth", thumb)
    assert full.get_attribute("src").split("/")[-2:] == ["img", thumb.get_attribute("src").split("/")[-1]]
    browser.find_element(By.ID, "overlay").click()


def test_runs_of_a_sweep_side_by_side(demo_runs, browser, serve):
    base = serve([demo_runs])
    open_page(browser, base + "#compare/umnibench/spatial-01", "#compare .compare-run")
    columns = browser.find_elements(By.CSS_SELECTOR, "#compare .compare-run")
    labels = [c.find_element(By.TAG_NAME, "h3").text for c in columns]
    assert len(columns) == 3 and len(set(labels)) == 3
    assert all(c.find_elements(By.CSS_SELECTOR, ".panel") for c in columns)


def test_a_thousand_case_run_stays_responsive(demo_runs, browser, serve, tmp_path):
    made = synthesise_thousand(demo_runs / "umnibench-0", tmp_path / "big")
    base = serve([tmp_path / "big"])
    open_page(browser, base + "#cases", "#case-list li")
    # one page of the list, no image loaded, a page of bounded height
    assert len(listed(browser)) == 50
    assert count_text(browser) == "1000 of 1000 cases"
    assert browser.execute_script("return [...document.images].filter(i => i.getAttribute('src')).length") == 0
    assert browser.execute_script("return document.documentElement.scrollHeight") < 4000
    # filtering and searching are done in the page, on 1,000 entries, without a server round trip
    browser.execute_script(
        """const box = document.getElementById('search');
           box.value = 'case-0999'; box.dispatchEvent(new Event('input'));""")
    assert [li.get_attribute("data-case") for li in listed(browser)] == ["case-0999"]
    browser.execute_script("const b = document.getElementById('search'); b.value = ''; b.dispatchEvent(new Event('input'));")
    browser.find_element(By.ID, "f-failed").click()
    assert count_text(browser).startswith(f"{made['failed']} of 1000")
    # the last page is reachable and a case far down opens with its images
    for _ in range(made["failed"] // 50 + 1):
        browser.find_element(By.ID, "next").click()
    assert listed(browser)[-1].get_attribute("data-case") == "case-0990"
    listed(browser)[-1].click()
    shots.wait_ready(browser, "#detail .panel img.thumb")
    assert "I think maybe the answer is purple 990" in browser.find_element(By.ID, "failures").text
    assert '<img src=x onerror="window.pwned=990"> Which objects? 990' in browser.find_element(By.ID, "detail").text
    assert browser.execute_script("return window.pwned === undefined")
    index_bytes = len(json.dumps(ViewerData([tmp_path / "big"]).index()))
    assert index_bytes < 1_000_000  # the list's data, not the cases' transcripts (tens of MB)
