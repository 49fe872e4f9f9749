"""GENIUS: generation from interleaved context under ad-hoc rules, judged for RC / VC / AQ."""

from .cases import GeniusTask
from .options import GeniusOptions
from .protocol import PROTOCOL, Genius

__all__ = ["PROTOCOL", "Genius", "GeniusOptions", "GeniusTask"]
