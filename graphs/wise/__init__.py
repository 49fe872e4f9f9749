"""WISE: does a text-to-image model apply world knowledge? Each prompt names its subject indirectly;
a judge grades the image against a note saying what the right knowledge would show."""

from .protocol import PROTOCOL, Wise, WiseCase, WiseOptions

__all__ = ["PROTOCOL", "Wise", "WiseCase", "WiseOptions"]
