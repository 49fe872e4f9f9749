"""Tiny random models shared by the transformers adapter tests: each is built once per test module
that asks for it (module scope), from configs, so nothing comes from a hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters import tiny_hf as tiny


@pytest.fixture(scope="module")
def janus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.build_janus(tmp_path_factory.mktemp("janus"))


@pytest.fixture(scope="module")
def vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.build_idefics3(tmp_path_factory.mktemp("idefics3"))
