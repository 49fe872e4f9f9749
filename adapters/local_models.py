"""Plumbing shared by the backends that load model weights into this process (transformers, diffusers).

Loading is serialised process-wide: ``from_pretrained`` in both libraries builds modules under temporarily
patched global torch state (accelerate's empty-weights context swaps ``nn.Module.register_parameter`` for the
whole process), so a second model loading in another thread at the same moment gets parameters left on the
``meta`` device. Backends start side by side, so every local load takes ``LOAD_LOCK``.
"""

from __future__ import annotations

import threading

__all__ = ["LOAD_LOCK"]

LOAD_LOCK = threading.RLock()
