"""``hopgraph doctor``: probe an endpoint and tell what it supports."""

from __future__ import annotations

import time
from dataclasses import dataclass

from PIL import Image, ImageDraw
from pydantic import BaseModel

from hopgraph.models.chat import ChatModel, p_yes_from_response, user
from hopgraph.models.errors import HopgraphModelError


@dataclass
class Probe:
    capability: str
    ok: bool
    detail: str


class _Capital(BaseModel):
    country: str
    capital: str


def _probe_image() -> Image.Image:
    im = Image.new("RGB", (96, 96), "white")
    ImageDraw.Draw(im).rectangle([16, 16, 80, 80], fill="red")
    return im


def diagnose(model: ChatModel) -> list[Probe]:
    """Run each probe; a failing probe is reported, not raised (an unreachable endpoint is)."""
    rows: list[Probe] = []
    served = model.served_models()
    ids = [m["id"] for m in served]
    model.check()  # raises ModelNotServedError naming what is served
    rows.append(Probe("endpoint", True, f"{model.base_url} ({model.dialect.name}); serves {ids}"))

    def attempt(name: str, fn) -> None:
        try:
            ok, detail = fn()
        except HopgraphModelError as e:
            ok, detail = False, str(e).splitlines()[0][:160]
        rows.append(Probe(name, ok, detail))

    def chat():
        text = model.complete(
            [user("What is the capital of France? Answer with one word.")],
            role="doctor", template="probe", max_tokens=8,
        )  # fmt: skip
        return bool(text.strip()), f"reply: {text.strip()[:40]!r}"

    def structured():
        mode = "json_schema" if model.dialect.json_schema else "json_object + schema"
        out = model.structured(
            [user("Give the country France and its capital as JSON.")],
            _Capital, role="doctor", template="probe", max_tokens=60,
        )  # fmt: skip
        return True, f"{mode}: {out.model_dump()}"

    def logprobs():
        resp = model.request(
            [user("Is Paris the capital of France? Reply with one word, Yes or No.")],
            role="doctor", template="probe", kind="probe",
            max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=20,
        )  # fmt: skip
        p, found = p_yes_from_response(resp)
        return (
            found,
            f"top_logprobs returned; P(Yes)={p:.3f}" if found else "no Yes/No in top tokens",
        )

    def image():
        resp = model.request(
            [user("What color is the square? One word.", images=[_probe_image()])],
            role="doctor", template="probe", kind="probe", check_images=False, max_tokens=8,
        )  # fmt: skip
        return True, f"reply: {(resp.choices[0].message.content or '').strip()[:40]!r}"

    def speed():
        began = time.perf_counter()
        resp = model.request(
            [user("Write a long story about a lighthouse keeper and the sea.")],
            role="doctor", template="probe", kind="probe", max_tokens=64, temperature=0.0,
        )  # fmt: skip
        seconds = time.perf_counter() - began
        n = resp.usage.completion_tokens if resp.usage else 0
        if not n:
            return False, "no completion tokens reported"
        return True, f"{1000 * seconds / n:.0f} ms/token, {n / seconds:.1f} tokens/s ({n} tokens)"

    attempt("chat", chat)
    attempt("structured output", structured)
    attempt("logprobs / P(Yes)", logprobs)
    attempt("image input", image)
    attempt("latency per token", speed)
    return rows
