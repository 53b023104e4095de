"""OCR for PDF pages and images that carry no text layer (slides, charts, scans).

The default engine is RapidOCR: PP-OCRv4 detection and recognition as ONNX models that ship
inside the pinned ``rapidocr_onnxruntime`` wheel, so it works offline from pip alone. Each model
file's sha256 is checked before first use. The system's ``tesseract`` is the alternative where it
is installed. Every OCR text carries the engine that read it (its provenance).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal, Protocol

from hopgraph.models.errors import ModelIntegrityError, ModelPackageMissing

OcrChoice = Literal["auto", "rapidocr", "tesseract", "off"]
OCR_CHOICES: tuple[str, ...] = ("auto", "rapidocr", "tesseract", "off")

RAPIDOCR_VERSION = "1.4.4"
RAPIDOCR_INSTALL = f"pip install rapidocr_onnxruntime=={RAPIDOCR_VERSION}"
RAPIDOCR_MODELS = {  # file in the wheel: (sha256, bytes)
    "ch_PP-OCRv4_det_infer.onnx": (
        "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
        4745517,
    ),
    "ch_PP-OCRv4_rec_infer.onnx": (
        "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
        10857958,
    ),
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": (
        "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
        585532,
    ),
}
MIN_SCORE = 0.5  # a recognised line below this confidence is dropped


class OcrEngine(Protocol):
    name: str

    def read(self, image: bytes) -> str: ...


@dataclass(frozen=True)
class OcrText:
    """What OCR read from one image, and which engine read it."""

    text: str
    engine: str


class RapidOcr:
    """RapidOCR's bundled PP-OCRv4 models through onnxruntime."""

    name = f"rapidocr-{RAPIDOCR_VERSION}"

    def __init__(self) -> None:
        spec = importlib.util.find_spec("rapidocr_onnxruntime")
        if spec is None or not spec.submodule_search_locations:
            raise ModelPackageMissing(f"OCR engine rapidocr needs its package: {RAPIDOCR_INSTALL}")
        verify_models(Path(next(iter(spec.submodule_search_locations))) / "models")
        from rapidocr_onnxruntime import RapidOCR

        self._engine = RapidOCR()
        self._lock = threading.Lock()

    def read(self, image: bytes) -> str:
        """The recognised lines of a PNG/JPEG image, top to bottom, one per line."""
        with self._lock:
            lines, _ = self._engine(image)
        return "\n".join(text for _, text, score in lines or [] if float(score) >= MIN_SCORE)


class TesseractOcr:
    """The system's tesseract binary (``apt install tesseract-ocr``)."""

    name = "tesseract"

    def __init__(self) -> None:
        exe = shutil.which("tesseract")
        if exe is None:
            raise ModelPackageMissing("OCR engine tesseract is not installed (no `tesseract`)")
        self._exe = exe

    def read(self, image: bytes) -> str:
        with tempfile.NamedTemporaryFile(suffix=".png") as f:
            f.write(image)
            f.flush()
            out = subprocess.run(
                [self._exe, f.name, "stdout"], capture_output=True, text=True, timeout=120
            )
        return out.stdout.strip() if out.returncode == 0 else ""


def verify_models(folder: Path) -> None:
    """Refuse RapidOCR model files whose sha256 or size differ from the pinned wheel's."""
    for name, (sha256, size) in RAPIDOCR_MODELS.items():
        path = folder / name
        if not path.is_file():
            raise ModelPackageMissing(f"OCR model {path} is missing; reinstall: {RAPIDOCR_INSTALL}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != sha256 or path.stat().st_size != size:
            raise ModelIntegrityError(
                f"OCR model {path}: sha256 {digest} does not match the pinned {sha256}; "
                f"refusing to use it. Reinstall: {RAPIDOCR_INSTALL}"
            )


@lru_cache(maxsize=4)
def ocr_engine(choice: str = "auto") -> OcrEngine | None:
    """The engine ``choice`` names; ``auto`` is RapidOCR, else tesseract, else None; ``off`` is
    None. A named engine that cannot load raises, naming what to install."""
    if choice not in OCR_CHOICES:
        raise ValueError(f"unknown OCR engine {choice!r}; one of {', '.join(OCR_CHOICES)}")
    if choice == "off":
        return None
    if choice == "rapidocr":
        return RapidOcr()
    if choice == "tesseract":
        return TesseractOcr()
    for engine in (RapidOcr, TesseractOcr):
        try:
            return engine()
        except ModelPackageMissing:
            continue
    return None


def read_image_text(engine: OcrEngine | None, image: bytes) -> OcrText | None:
    """OCR of one encoded image, or None without an engine or when nothing was read."""
    if engine is None:
        return None
    text = engine.read(image).strip()
    return OcrText(text, engine.name) if text else None
