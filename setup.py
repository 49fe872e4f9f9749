"""Maps the repository's top-level folders onto import names that no other PyPI project uses.

`graphs/`, `adapters/` and `cases/` sit beside `umni/` (the design card's layout) but install as
`umni_graphs`, `umni_adapters` and `umni_cases`, because `graphs` and `adapters` are taken on PyPI.
"""

from setuptools import find_packages, setup

FOLDERS = {"umni": "umni", "umni_graphs": "graphs", "umni_adapters": "adapters", "umni_cases": "cases"}


def packages() -> list[str]:
    found: list[str] = []
    for name, folder in FOLDERS.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


#: Bundled case sets are data folders (JSON and images), shipped inside `umni_cases`.
CASE_DATA = ["**/*.json", "**/*.jsonl", "**/*.png", "**/*.jpg", "**/*.md"]

setup(
    packages=packages(),
    package_dir=dict(FOLDERS),
    package_data={"umni_cases": CASE_DATA, "umni.reporting": ["templates/*", "viewer_static/*"], "umni_graphs": ["*/paper.json"]},
    include_package_data=True,
)
