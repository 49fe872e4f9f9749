"""Suite-wide guards: nothing may reach a model hub, and nothing is written to the user's cache.

Also: skips for absent benchmark files (tests/support/shared_data.py) share one location, so that
``-ra`` folds them into one summary line whichever test or fixture asked for the files; and tests that
share something machine-wide are kept on one xdist worker (`ONE_WORKER`).
"""

import os
import tempfile

import pytest

from tests.support import shared_data

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_name] = "1"
os.environ.setdefault("UMNI_CACHE", tempfile.mkdtemp(prefix="umni-test-cache-"))

#: Test paths whose tests run one after another on one worker under ``pytest -n N --dist loadgroup``
#: (scripts/test), by group. Everything else is independent: servers bind free ports, PostgreSQL
#: runs one private server per worker, and each worker process has its own UMNI_CACHE.
ONE_WORKER = {
    # Local Ray clusters: test_ray_auto_cli must find no cluster to join and counts every Ray process
    # on the machine, so no other cluster may start or stop while it runs.
    "tests/ray/": "ray",
    "tests/bench/test_bench_smoke.py": "ray",  # its ray_overhead benchmark starts a cluster
    # One headless chromium and one build of the demo runs (every protocol) rather than one per worker.
    "tests/viewer/test_viewer_browser.py": "browser",
}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and shared_data.ABSENT in longrepr[2]:
        report.longrepr = (shared_data.__file__, None, longrepr[2])  # type: ignore[assignment]
    return report


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        for prefix, group in ONE_WORKER.items():
            if where.startswith(prefix):
                item.add_marker(pytest.mark.xdist_group(group))

