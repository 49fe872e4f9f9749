"""Suite-wide guards: nothing may reach a model hub, and nothing is written to the user's cache.

Also: skips for absent benchmark files (tests/support/shared_data.py) share one location, so that
``-ra`` folds them into one summary line whichever test or fixture asked for the files.
"""

import os
import tempfile

import pytest

from tests.support import shared_data

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_name] = "1"
os.environ.setdefault("UMNI_CACHE", tempfile.mkdtemp(prefix="umni-test-cache-"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and shared_data.ABSENT in longrepr[2]:
        report.longrepr = (shared_data.__file__, None, longrepr[2])  # type: ignore[assignment]
    return report
