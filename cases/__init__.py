"""Case sets bundled with umni, written by the umni authors (images drawn by us)."""

from pathlib import Path

ROOT = Path(__file__).parent


def bundled(protocol: str) -> Path:
    """The folder holding the bundled case set of `protocol`."""
    return ROOT / protocol
