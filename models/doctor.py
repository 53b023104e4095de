"""``hopgraph doctor``: probe an endpoint and tell what it supports."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image, ImageDraw
from pydantic import BaseModel

from hopgraph.models.chat import (
    ChatModel,
    p_yes_from_response,
    token_ids_instead_of_text,
    user,
)
from hopgraph.models.errors import HopgraphModelError, first_line


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


def _attempted(name: str, fn, on_probe=None) -> Probe:  # noqa: ANN001 - () -> (ok, detail)
    """A probe's row: what it found, or its failure's first line (never raised)."""
    if on_probe is not None:
        on_probe(name)
    try:
        ok, detail = fn()
    except (HopgraphModelError, ValueError) as e:
        ok, detail = False, first_line(e)[:200]
    return Probe(name, ok, detail)


def diagnose_vlm(model: ChatModel, images: int) -> list[Probe]:
    """The VLM endpoint: that it serves the model, accepts ``images`` images in one request
    (a server limited to fewer refuses MAB-DQA's page calls with 400s), and gives P(Yes)."""
    rows: list[Probe] = []
    model.check()
    rows.append(
        Probe(
            "VLM endpoint", True, f"{model.base_url} ({model.dialect.name}); serves {model.model!r}"
        )
    )

    def attempt(name: str, fn) -> None:
        rows.append(_attempted(name, fn))

    def many_images():
        resp = model.request(
            [
                user(
                    "How many pictures are there? Answer with a number.",
                    images=[_probe_image()] * images,
                )
            ],
            role="doctor",
            template="probe",
            kind="probe",
            max_tokens=8,
        )
        text = (resp.choices[0].message.content or "").strip()[:40]
        return True, f"{images} images in one request accepted (reply {text!r})"

    attempt(f"VLM image input ({images} per call)", many_images)
    attempt("VLM logprobs / P(Yes)", lambda: _p_yes_probe(model, images=[_probe_image()]))
    return rows


def _p_yes_probe(model: ChatModel, images: list | None = None) -> tuple[bool, str]:
    resp = model.request(
        [
            user(
                "Is Paris the capital of France? Reply with one word, Yes or No.",
                images=images or [],
            )
        ],
        role="doctor",
        template="probe",
        kind="probe",
        max_tokens=1,
        temperature=0.0,
        logprobs=True,
        top_logprobs=20,
    )
    if token_ids_instead_of_text(resp):
        return False, (
            "top tokens come back as token ids (token_id:N), so no Yes / No can be "
            "read: start vLLM without --return-tokens-as-token-ids"
        )
    p, found = p_yes_from_response(resp)
    return found, f"top_logprobs returned; P(Yes)={p:.3f}" if found else "no Yes/No in top tokens"


def diagnose(
    model: ChatModel,
    *,
    embedded: bool = False,
    vlm: bool = False,
    on_probe: Callable[[str], None] | None = None,
) -> list[Probe]:
    """Run each probe; a failing probe is reported, not raised (an unreachable endpoint is).
    ``embedded``: the endpoint is hopgraph's own llama.cpp server, whose build is checked
    against this CPU too. ``vlm``: images go to a separate VLM (``diagnose_vlm``), so this
    endpoint's image input is not probed. ``on_probe(name)`` is told as each probe starts."""
    served = model.served_models()
    ids = [m["id"] for m in served]
    model.check()  # raises ModelNotServedError naming what is served
    rows = [Probe("endpoint", True, f"{model.base_url} ({model.dialect.name}); serves {ids}")]
    rates: dict[str, float] = {}
    probes = [
        ("chat", lambda: _chat(model)),
        ("structured output", lambda: _structured(model)),
        ("logprobs / P(Yes)", lambda: _p_yes_probe(model)),
        *([] if vlm else [("image input", lambda: _image(model))]),
        ("prefill rate", lambda: _prefill(model, rates)),
        ("decode rate", lambda: _decode(rates)),
        ("machine load", _machine),
        *([("llama.cpp build", _build), ("engine", lambda: _engine(model))] if embedded else []),
    ]
    return rows + [_attempted(name, fn, on_probe) for name, fn in probes]


def _chat(model: ChatModel) -> tuple[bool, str]:
    text = model.complete(
        [user("What is the capital of France? Answer with one word.")],
        role="doctor",
        template="probe",
        max_tokens=8,
    )
    return bool(text.strip()), f"reply: {text.strip()[:40]!r}"


def _structured(model: ChatModel) -> tuple[bool, str]:
    mode = "json_schema" if model.dialect.json_schema else "json_object + schema"
    out = model.structured(
        [user("Give the country France and its capital as JSON.")],
        _Capital,
        role="doctor",
        template="probe",
        max_tokens=60,
    )
    return True, f"{mode}: {out.model_dump()}"


def _image(model: ChatModel) -> tuple[bool, str]:
    if not model.dialect.images:  # known without asking: no request, no retries
        return False, (
            f"{model.dialect.name} serves this model as text only: questions and "
            "pages with images need a VLM (vlm_base_url / vlm_model)"
        )
    resp = model.request(
        [user("What color is the square? One word.", images=[_probe_image()])],
        role="doctor",
        template="probe",
        kind="probe",
        check_images=False,
        max_tokens=8,
    )
    return True, f"reply: {(resp.choices[0].message.content or '').strip()[:40]!r}"


def _prefill(model: ChatModel, rates: dict[str, float]) -> tuple[bool, str]:
    rates.update(measure_speed(model))
    return True, (
        f"{rates['prefill_tokens_per_s']:.0f} prompt tokens/s; a 1,700-token prompt waits "
        f"~{1700 / rates['prefill_tokens_per_s']:.0f}s before its first token"
    )


def _decode(rates: dict[str, float]) -> tuple[bool, str]:
    if not rates:
        return False, "not measured (the prefill probe failed)"
    return True, f"{rates['decode_tokens_per_s']:.1f} tokens/s generated"


def _build() -> tuple[bool, str]:
    from hopgraph.models.embedded import llama_build_features, unused_cpu_features

    uses = ", ".join(llama_build_features()) or "no AVX2"
    unused = unused_cpu_features()
    if not unused:
        return True, f"uses {uses}: what this CPU offers"
    return False, (
        f"uses {uses}, but this CPU also has {', '.join(unused)}: a build for it reads "
        "prompts about 1.9x faster (`make native`, about 7 minutes)"
    )


def _engine(model: ChatModel) -> tuple[bool, str]:
    """Which embedded engine serves, its llama.cpp revision, slots and threads."""
    from hopgraph.models.llama_server import LLAMA_CPP_REVISION

    server = model.server
    if server is None:
        return False, "not started by hopgraph"
    rev = LLAMA_CPP_REVISION[:7]
    threads = f"{server.n_threads} generation / {server.n_threads_batch} prompt thread(s)"
    if server.engine == "llama-server":
        return True, (
            f"llama-server (llama.cpp {rev}, {server.binary}): {server.slots} "
            f"parallel slots of {server.n_ctx} tokens, prompt prefixes reused; "
            f"{threads}"
        )
    return False, (
        f"{server.engine} (llama.cpp {rev}): one request at a time; {threads}. "
        "`make install` builds llama-server, which answers several at once"
    )


def _machine() -> tuple[bool, str]:
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    busy = load > 0.8 * cores
    detail = f"load {load:.1f} on {cores} cores"
    if busy:
        detail += (
            ": other work competes for the CPU; an embedded model runs several "
            "times slower (set request_timeout higher, or wait)"
        )
    return not busy, detail


DECODE_TOKENS = 64


Needs = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
"""Per method: the capabilities every run needs and those only questions or pages with images
need, as each method's spec declares them (``MethodSpec.needs``, ``image_needs``)."""


def method_support(rows: list[Probe], needs: Needs) -> list[tuple[str, str, str]]:
    """(method, "yes" | "text only" | "no", what is missing) from the probes' rows: an image or
    P(Yes) need is met by the VLM's probe where one ran, else by the endpoint's."""

    def ok(capability: str) -> bool | None:
        vlm = [r.ok for r in rows if r.capability.startswith(f"VLM {capability}")]
        own = [r.ok for r in rows if r.capability == capability]
        found = vlm if capability == "image input" and vlm else own or vlm
        return all(found) if found else None

    out = []
    for method, (every_run, for_images) in needs.items():
        missing = [c for c in every_run if not ok(c)]
        no_images = [c for c in for_images if not ok(c)]
        verdict = "no" if missing else "text only" if no_images else "yes"
        detail = ", ".join(missing) or (
            "questions or pages with images need a VLM (image input)" if no_images else ""
        )
        out.append((method, verdict, detail))
    return out


def measure_speed(model: ChatModel, entries: int = 20, reads: int = 3) -> dict[str, float]:
    """How fast ``model``'s endpoint reads a prompt and generates, from calls on our own text
    behind a fresh nonce (so nothing is cached), after one untimed call that warms the server
    up: ``entries`` log lines (about 20 tokens each) read for one token, then a 64-token count
    whose prompt time is taken off, each ``reads`` times, the median kept: single reads gave
    68-79 tokens/s on sittings whose own calls ran within 2 % of each other (the median of
    three, 81-88), so one slow read must not set a sitting's speed. Raises
    ``HopgraphModelError`` when the endpoint fails, ``ValueError`` when it reports no usage."""

    def timed(text: str, max_tokens: int) -> tuple[float, int, int]:
        began = time.perf_counter()
        resp = model.request(
            [user(f"Probe {time.time_ns()}. {text}")],  # a fresh prefix: no cached prompt
            role="doctor",
            template="probe",
            kind="probe",
            max_tokens=max_tokens,
            temperature=0.0,
        )
        usage = resp.usage
        return (
            time.perf_counter() - began,
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )

    filler = " ".join(
        f"Entry {i}: at dusk the keeper trimmed lamp {i % 7}, wiped the glass, and logged the wind."
        for i in range(entries)
    )
    # untimed: a server just started reads its first prompt slower (weights paged in, buffers)
    timed(filler[: len(filler) // 4] + " Reply with one word: done.", 1)
    prefills = []
    for _ in range(reads):
        seconds, n_prompt, _ = timed(filler + " Reply with one word: done.", 1)
        if not n_prompt:
            raise ValueError("the endpoint reported no prompt tokens")
        prefills.append(n_prompt / seconds)
    prefill = statistics.median(prefills)
    decodes, short = [], []
    for _ in range(3 * reads):
        # a reply meant to run to max_tokens; a short one times little but the request, and
        # a small model sometimes stops counting early (28 tokens on one CI run), so a fresh
        # nonce asks again, up to three times as often as there are reads
        seconds, n_prompt, n = timed("Count from 1 to 200, one number per line.", DECODE_TOKENS)
        if n < DECODE_TOKENS // 2:
            short.append(n)
            continue
        decodes.append(n / max(seconds - n_prompt / prefill, 1e-6))
        if len(decodes) == reads:
            break
    if not decodes:
        raise ValueError(f"every reply was too short to time ({short} tokens)")
    return {
        "prefill_tokens_per_s": round(prefill, 2),
        "decode_tokens_per_s": round(statistics.median(decodes), 2),
    }
