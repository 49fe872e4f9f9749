"""umni: evaluate unified multimodal models as async graphs."""
__version__ = "0.1.0"
