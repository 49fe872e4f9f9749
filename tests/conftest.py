"""Suite-wide guards: nothing may reach a model hub, and nothing is written to the user's cache."""

import os
import tempfile

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_name] = "1"
os.environ.setdefault("UMNI_CACHE", tempfile.mkdtemp(prefix="umni-test-cache-"))
