"""Evaluation protocols (UmniBench, GENIUS, AEGIS, WISE, GIR-Bench) as umni graphs.

Every protocol folder has the same core modules, one per part of `umni.plugin.Protocol`'s contract
(its four type parameters are the case, the options, the record and the scores):

    options.py     the ``--option`` fields (OptionsT); the defaults reproduce the official evaluation
    cases.py       the run's case (CaseT) and how a ``--cases`` path becomes a CaseSet (skips named)
    graph.py       one case's graph, its typed handles, and the functions its nodes run
    records.py     a case's outcomes → its results.jsonl record (RecordT), and the record's report views
    scoring.py     the official formulas that score one case
    summary.py     records → summary.json scores (ScoresT), the headline's per-case parts and strata
                   that the statistics resample, and the report's tables
    deviations.py  where umni departs from the official code, counted per run (UmniBench has no
                   official code, so no such module)
    protocol.py    the Protocol subclass: each method calls the module above that answers it

Concepts of one benchmark keep modules named for them: its prompts (``prompts.py``), a published
data format too large to share ``cases.py`` with (``dataset.py``: GENIUS, GIR-Bench), GIR-Bench's
task vocabulary, formulas and feature extractors (``tasks.py``, ``metrics.py``, ``masks.py``,
``sudoku.py``, ``fid.py``, ``dinov3.py``, ``weights.py``), GENIUS's image digests.

A node function's module and name enter its cache keys: one moved between modules keeps the name it
was first keyed under (`keyed.keyed_as`), and ``tests/golden/test_node_names.py`` pins them.
"""
