"""Screenshots of `umni view` for the documentation, taken in headless chromium.

    python docs/screenshots.py [OUT_DIR]     # default: docs/screenshots

Builds small runs of every protocol with the offline reference backend `sim/umm` (three
UmniBench runs that differ in the understander — one of them failing on some calls — so the
comparison view and the failure display have something to show),
serves them with the viewer and saves one PNG per page: the case list, a case with its
transcript, the side-by-side comparison, a failed case with its raw failure messages, and each
protocol's leaderboard. The browser tests call
`take_screenshots`, so the committed pictures are what the tests see.
"""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
PROTOCOLS = ("umnibench", "genius", "aegis", "wise", "girbench")


def browser_paths() -> tuple[str, str] | None:
    """(chromium, chromedriver) when both are installed, else None."""
    browser = next((p for p in CHROMIUM if Path(p).exists()), shutil.which("chromium"))
    driver = next((p for p in CHROMEDRIVER if Path(p).exists()), shutil.which("chromedriver"))
    return (browser, driver) if browser and driver else None


def make_browser(width: int = 1400, height: int = 900):  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = browser_paths()
    if found is None:
        raise RuntimeError("chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(found[1]), options=options)


def build_demo_runs(root: Path) -> Path:
    """Small runs of every protocol (sim/umm, shared cache) under `root`/runs; returns that folder."""
    from umni.run.evaluation import RunRequest, evaluate
    from umni.store.runfolder import RunFolder
    from umni.util.policy import RetryPolicy

    runs, cache = root / "runs", root / "cache"
    plans = [
        ("umnibench", "sim/umm", [], {}, 6),
        ("umnibench", "sim/umm", ["understand=sim/umm?skill=0.4"], {}, 6),
        ("umnibench", "sim/umm", ["understand=sim/umm?error_rate=0.3"], {}, 6),
        ("genius", "sim/umm", [], {"reflection_rounds": "1"}, 3),
        ("aegis", "sim/umm", [], {}, 6),
        ("wise", "sim/umm", [], {}, 6),
        ("girbench", "sim/umm", [], {"features": "embed"}, 6),  # no hub feature extractor: offline
    ]
    for i, (protocol, model, roles, options, limit) in enumerate(plans):
        out = runs / f"{protocol}-{i}"
        # the failing run gets a cache of its own: a shared one would answer it from the healthy runs
        own = root / "cache-failing" if any("error_rate" in r for r in roles) else cache
        if not RunFolder(out).summary_json.exists():
            evaluate(RunRequest(protocol=protocol, out=out, model=model, roles=roles, options=options, cache=own, limit=limit,
                                progress=False, retry=RetryPolicy(max_attempts=1)))
    return runs


def serve_in_thread(paths: list[Path]):  # type: ignore[no-untyped-def]
    """A viewer server on a free port, serving from a daemon thread; returns (server, base URL)."""
    from umni.reporting.viewer import make_server

    server = make_server(paths)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def wait_ready(driver, css: str, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def full_page(driver, path: Path, min_height: int = 900) -> Path:  # type: ignore[no-untyped-def]
    """Resize to the page's height (bounded) and save a PNG, reduced to 256 colours (no dithering:
    text stays crisp) so the committed pictures stay small."""
    from PIL import Image

    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(min_height, min(int(height) + 40, 2600)))
    driver.save_screenshot(str(path))
    with Image.open(path) as shot:
        small = shot.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)
    return path


def take_screenshots(out: Path, work: Path) -> list[Path]:
    """Every screenshot the README shows, written to `out`; returns their paths."""
    from selenium.webdriver.common.by import By

    out.mkdir(parents=True, exist_ok=True)
    runs = build_demo_runs(work)
    server, base = serve_in_thread([runs])
    driver = make_browser()
    shots: list[Path] = []
    try:
        for protocol in PROTOCOLS:
            driver.set_window_size(1400, 900)
            driver.get(f"{base}#tables/{protocol}")
            wait_ready(driver, f"section#protocol-{protocol} table.lb")
            shots.append(full_page(driver, out / f"leaderboard-{protocol}.png", 500))
        driver.set_window_size(1400, 900)
        driver.get(f"{base}#cases")
        wait_ready(driver, "#case-list li")
        shots.append(full_page(driver, out / "viewer-cases.png"))
        driver.find_element(By.CSS_SELECTOR, "#case-list li[data-case^='implicit_pattern']").click()
        wait_ready(driver, "#detail .transcript details.node")
        shots.append(full_page(driver, out / "viewer-case.png"))
        driver.set_window_size(1400, 900)
        driver.get(f"{base}#cases")
        wait_ready(driver, "#case-list li")
        driver.find_element(By.CSS_SELECTOR, "#case-list li[data-protocol='umnibench']").click()
        wait_ready(driver, "#compare-link").click()
        wait_ready(driver, "#compare .compare-run img")
        shots.append(full_page(driver, out / "viewer-compare.png"))
        driver.set_window_size(1400, 900)
        driver.get(f"{base}#cases")
        wait_ready(driver, "#case-list li")
        driver.find_element(By.ID, "f-failed").click()
        wait_ready(driver, "#case-list[data-query*='status=failed'] li").click()
        wait_ready(driver, "#failures .failure")
        shots.append(full_page(driver, out / "viewer-failure.png"))
        driver.set_window_size(1400, 900)
        driver.get(f"{base}#runs")
        wait_ready(driver, "tr[data-run]")
        shots.append(full_page(driver, out / "viewer-runs.png", 500))
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()
    return shots


if __name__ == "__main__":
    import os
    import tempfile

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the demo runs never reach a model hub

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "screenshots"
    with tempfile.TemporaryDirectory() as tmp:
        for shot in take_screenshots(target, Path(tmp)):
            print(shot)
