"""Evaluation protocols (UmniBench, GENIUS, AEGIS, WISE, GIR-Bench) as umni graphs."""
