"""WISE: does a text-to-image model apply world knowledge? Each prompt names its subject indirectly;
a judge grades the image against a note saying what the right knowledge would show."""

from .cases import WiseCase
from .options import WiseOptions
from .protocol import PROTOCOL, Wise

__all__ = ["PROTOCOL", "Wise", "WiseCase", "WiseOptions"]
