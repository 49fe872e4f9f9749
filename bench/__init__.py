"""umni's benchmark suite: engine overhead, latency hiding, module-swap reuse, scale, batching.

Run from the repository root: ``python -m bench`` (full, a few minutes on two cores),
``python -m bench --quick`` (smaller scale sizes) or ``python -m bench --smoke`` (seconds; what CI
runs). See ``bench/run.py`` for the options and ``bench/README.md`` for what each figure means.
"""
