"""GENIUS: generation from interleaved context under ad-hoc rules, judged for RC / VC / AQ."""

from .protocol import PROTOCOL, Genius, GeniusOptions, GeniusTask

__all__ = ["PROTOCOL", "Genius", "GeniusOptions", "GeniusTask"]
