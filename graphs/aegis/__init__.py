"""AEGIS: world knowledge across understanding, generation, editing and interleaved tasks, graded
by a judge on a fixed yes/no checklist per case (Deterministic Checklist-based Evaluation)."""

from .protocol import PROTOCOL, Aegis, AegisOptions

__all__ = ["PROTOCOL", "Aegis", "AegisOptions"]
