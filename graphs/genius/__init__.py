"""GENIUS: generation from interleaved context under ad-hoc rules, judged for RC / VC / AQ."""

from .options import GeniusOptions
from .protocol import PROTOCOL, Genius
from .tasks import GeniusTask

__all__ = ["PROTOCOL", "Genius", "GeniusOptions", "GeniusTask"]
