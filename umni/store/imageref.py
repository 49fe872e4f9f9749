"""How a stored image is passed around: by the sha256 of its PNG bytes, with its size."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ImageRef(BaseModel):
    """A stored image, by content hash."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    width: int
    height: int

    @property
    def filename(self) -> str:
        return f"{self.sha256}.png"
