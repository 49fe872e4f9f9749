"""Template umni plugin for a unified model with its own inference code: the ``myumm`` backend.

``inference.py`` is the only file a user rewrites (their model's load and batch calls);
``backend.py`` is the umni side and stays as it is for most models.
"""

from .backend import MyUMMBackend, MyUMMParams

__all__ = ["MyUMMBackend", "MyUMMParams"]
