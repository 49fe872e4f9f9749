"""GIR-Bench: reasoning-centric generation and editing, scored by detectors, OCR, features and masks."""

from .cases import GirCase
from .options import GirOptions
from .protocol import PROTOCOL, GirBench

__all__ = ["PROTOCOL", "GirBench", "GirCase", "GirOptions"]
