"""GIR-Bench: reasoning-centric generation and editing, scored by detectors, OCR, features and masks."""

from .protocol import PROTOCOL, GirBench, GirCase, GirOptions

__all__ = ["PROTOCOL", "GirBench", "GirCase", "GirOptions"]
