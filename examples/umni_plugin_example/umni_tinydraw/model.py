"""The model's own code, as a research repository would ship it (Bagel, OmniGen2 and Ovis-U1 do).

TinyDraw is a deliberately small network with the shape of a unified model: a byte-level text
encoder, a decoder that draws an image from the text, and an editing path that reads an input
image beside the text. It is untrained; what matters here is that it loads from its own files
(``config.json`` and ``weights.pt``), runs on a seed, and keeps an edited image's size.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class TinyDrawConfig:
    width: int = 32  # channels of the text embedding and the decoder
    grid: int = 8  # side of the latent grid the decoder starts from


class TinyDraw(nn.Module):
    def __init__(self, config: TinyDrawConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(256, config.width)
        self.to_grid = nn.Linear(config.width, config.width * config.grid * config.grid)
        self.image_in = nn.Conv2d(3, config.width, 3, padding=1)
        self.decode = nn.Sequential(
            nn.Conv2d(2 * config.width, config.width, 3, padding=1), nn.SiLU(), nn.Conv2d(config.width, 3, 3, padding=1)
        )

    def text(self, prompt: str) -> torch.Tensor:
        ids = torch.tensor(list(prompt.encode("utf-8")[:256]) or [0])
        return self.embed(ids).mean(0)

    def forward(
        self, prompt: str, size: tuple[int, int], generator: torch.Generator, image: torch.Tensor | None = None
    ) -> torch.Tensor:
        """An RGB image in [0, 1], shape (3, height, width); ``image`` (same layout) conditions an edit."""
        width, height = size
        c = self.config
        grid = self.to_grid(self.text(prompt)).view(1, c.width, c.grid, c.grid)
        grid = grid + 0.1 * torch.randn(grid.shape, generator=generator)
        text_map = F.interpolate(grid, size=(height, width), mode="bilinear", align_corners=False)
        if image is None:
            image_map = torch.zeros_like(text_map)
        else:
            image_map = self.image_in(image.unsqueeze(0))
        out = self.decode(torch.cat([text_map, image_map], dim=1))[0]
        if image is not None:
            out = out + image  # an edit starts from the input
        return out.sigmoid() if image is None else out.clamp(0, 1)

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps({"model_type": "tinydraw", **asdict(self.config)}))
        torch.save(self.state_dict(), directory / "weights.pt")
        return directory

    @classmethod
    def load(cls, directory: Path) -> TinyDraw:
        raw = json.loads((directory / "config.json").read_text())
        if raw.pop("model_type", None) != "tinydraw":
            raise ValueError(f"{directory}/config.json is not a TinyDraw config")
        model = cls(TinyDrawConfig(**raw))
        model.load_state_dict(torch.load(directory / "weights.pt", weights_only=True))
        return model.eval()


def write_random(directory: Path, seed: int = 0) -> Path:
    """Random weights in ``directory``: stands in for a downloaded checkpoint."""
    torch.manual_seed(seed)
    return TinyDraw(TinyDrawConfig()).save(directory)


if __name__ == "__main__":
    print(write_random(Path(sys.argv[1])))
