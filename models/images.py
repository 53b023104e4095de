"""Images as OpenAI ``image_url`` content parts: validated, resized to a pixel budget, data URLs."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from hopgraph.models.errors import ImageInputError


def load_image(path: str | Path) -> Image.Image:
    """Open and fully decode an image, naming the file in any failure."""
    p = Path(path)
    if not p.is_file():
        raise ImageInputError(f"image file not found: {p}")
    try:
        with Image.open(p) as im:
            im.load()  # forces a full decode: truncated files fail here
            return im.copy()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise ImageInputError(f"not a readable image: {p} ({e})") from e


def fit_pixels(im: Image.Image, max_pixels: int) -> Image.Image:
    """Downscale (never upscale) so width*height <= max_pixels, keeping the aspect ratio."""
    w, h = im.size
    if w * h <= max_pixels:
        return im
    scale = math.sqrt(max_pixels / (w * h))
    size = (max(1, int(w * scale)), max(1, int(h * scale)))
    return im.resize(size, Image.Resampling.LANCZOS)


MIN_SIDE = 28
"""Qwen2.5-VL's processor refuses a side shorter than its 28-pixel patch grid factor..."""
MAX_ASPECT = 200
"""...and an aspect ratio over 200 (answered with HTTP 400 or 500)."""


def pad_for_vlm(im: Image.Image) -> Image.Image:
    """The image on a white canvas just large enough that no side is under MIN_SIDE and the
    aspect ratio is at most MAX_ASPECT (centred; an image that needs none is returned as is)."""
    w, h = im.size
    long = max(w, h)
    short = max(MIN_SIDE, math.ceil(long / MAX_ASPECT))
    size = (max(w, MIN_SIDE, short if w < h else 0), max(h, MIN_SIDE, short if h <= w else 0))
    if size == (w, h):
        return im
    fill = (255, 255, 255, 0) if im.mode in ("RGBA", "LA") else "white"
    canvas = Image.new("RGBA" if im.mode in ("RGBA", "LA") else "RGB", size, fill)
    canvas.paste(im, ((size[0] - w) // 2, (size[1] - h) // 2))
    return canvas


def data_url(image: str | Path | Image.Image, max_pixels: int = 1024 * 28 * 28) -> str:
    """A ``data:image/...;base64,`` URL: PNG for images with alpha or palettes, else JPEG,
    resized to ``max_pixels`` and padded to the sizes a VLM processor accepts."""
    im = image if isinstance(image, Image.Image) else load_image(image)
    im = pad_for_vlm(fit_pixels(im, max_pixels))
    buf = io.BytesIO()
    if im.mode in ("RGBA", "LA", "P"):
        im.save(buf, format="PNG")
        mime = "image/png"
    else:
        im.convert("RGB").save(buf, format="JPEG", quality=90)
        mime = "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def is_url(image: object) -> bool:
    """A data URL or an http(s) URL: an image that is not a file of this machine."""
    return isinstance(image, str) and image.startswith(("data:image/", "http://", "https://"))


def _decoded(url: str) -> Image.Image:
    """The image a ``data:image/...;base64,`` URL carries."""
    head, _, payload = url.partition(",")
    if not head.endswith(";base64"):
        raise ImageInputError("a data URL image must be base64")
    try:
        with Image.open(io.BytesIO(base64.b64decode(payload, validate=True))) as im:
            im.load()
            return im.copy()
    except (ValueError, UnidentifiedImageError, OSError, SyntaxError) as e:
        raise ImageInputError(f"not a readable data URL image ({e})") from e


def image_size(image: str | Path) -> tuple[int, int]:
    """(width, height) of a file or data URL image, read from its header; (0, 0) for an
    http(s) URL, which hopgraph never fetches."""
    if isinstance(image, str) and image.startswith(("http://", "https://")):
        return 0, 0
    if isinstance(image, str) and image.startswith("data:image/"):
        return _decoded(image).size
    try:
        with Image.open(Path(image)) as im:
            return im.size
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise ImageInputError(f"not a readable image: {image}") from e


def image_part(image: str | Path | Image.Image, max_pixels: int = 1024 * 28 * 28) -> dict:
    """An ``image_url`` part: a file or data URL resized to ``max_pixels`` and sent as a data
    URL; an http(s) URL passed on as it is (the VLM server fetches it, hopgraph never does)."""
    if isinstance(image, str) and image.startswith(("http://", "https://")):
        return {"type": "image_url", "image_url": {"url": image}}
    if isinstance(image, str) and image.startswith("data:image/"):
        image = _decoded(image)
    return {"type": "image_url", "image_url": {"url": data_url(image, max_pixels)}}
