"""UmniBench: a model draws, edits its own image twice, and answers nine questions about it."""

from .protocol import PROTOCOL, UmniBench

__all__ = ["PROTOCOL", "UmniBench"]
