"""AEGIS: world knowledge across understanding, generation, editing and interleaved tasks, graded
by a judge on a fixed yes/no checklist per case (Deterministic Checklist-based Evaluation)."""

from .options import AegisOptions
from .protocol import PROTOCOL, Aegis

__all__ = ["PROTOCOL", "Aegis", "AegisOptions"]
