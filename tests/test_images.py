import base64
import io

import pytest
from PIL import Image

from hopgraph.models.errors import ImageInputError
from hopgraph.models.images import data_url, fit_pixels, load_image


def decode(url: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_resize_to_pixel_budget_keeps_aspect():
    im = fit_pixels(Image.new("RGB", (2000, 1000)), 200_000)
    assert im.size[0] * im.size[1] <= 200_000
    assert abs(im.size[0] / im.size[1] - 2.0) < 0.02


def test_small_images_are_not_upscaled():
    assert fit_pixels(Image.new("RGB", (10, 10)), 10_000).size == (10, 10)


def test_data_url_png_for_alpha_and_jpeg_otherwise(tmp_path):
    Image.new("RGBA", (40, 30), (255, 0, 0, 128)).save(tmp_path / "a.png")
    url = data_url(tmp_path / "a.png")
    assert url.startswith("data:image/png;base64,") and decode(url).size == (40, 30)
    small = data_url(Image.new("RGBA", (20, 10)))  # padded to the VLM's 28-pixel minimum
    assert small.startswith("data:image/png;base64,") and decode(small).size == (28, 28)
    assert data_url(Image.new("RGB", (5, 5))).startswith("data:image/jpeg;base64,")


def test_missing_file(tmp_path):
    with pytest.raises(ImageInputError, match="not found.*nope.png"):
        load_image(tmp_path / "nope.png")


def test_not_an_image(tmp_path):
    (tmp_path / "text.png").write_text("hello")
    with pytest.raises(ImageInputError, match="text.png"):
        load_image(tmp_path / "text.png")


def test_truncated_image(tmp_path):
    buf = io.BytesIO()
    Image.new("RGB", (200, 200), "green").save(buf, format="PNG")
    (tmp_path / "cut.png").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(ImageInputError, match="cut.png"):
        load_image(tmp_path / "cut.png")
