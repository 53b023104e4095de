"""An embedded GGUF as a Hugging Face model folder that vLLM serves (no download).

    .venv-vllm/bin/python models/gguf_to_hf.py GGUF OUT [--dtype float32]

Run in vLLM's own environment (``make vllm``: transformers, gguf and accelerate), not in
hopgraph's: transformers reads the GGUF's weights and tokenizer (``from_pretrained(...,
gguf_file=...)``, dequantized to ``--dtype``) and writes them as safetensors with their config
and tokenizer. ``hopgraph serve --engine vllm`` calls it with the verified GGUF of the embedded
model and serves the folder. A folder already written for the same GGUF (``source.json``) is
kept. Standard library and transformers only, so the file runs outside the package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any


def _fingerprint(gguf: Path) -> dict[str, object]:
    """What identifies the GGUF cheaply: name, size and the sha256 of its first and last MiB."""
    size = gguf.stat().st_size
    h = hashlib.sha256()
    with open(gguf, "rb") as f:
        h.update(f.read(1 << 20))
        f.seek(max(0, size - (1 << 20)))
        h.update(f.read(1 << 20))
    return {"gguf": gguf.name, "size": size, "ends_sha256": h.hexdigest()}


def convert(gguf: Path, out: Path, dtype: str = "float32") -> Path:
    """The HF folder of ``gguf`` in ``out`` (written once per GGUF and dtype)."""
    want = {**_fingerprint(gguf), "dtype": dtype}
    stamp = out / "source.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    began = time.perf_counter()
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model: Any = AutoModelForCausalLM.from_pretrained(  # typed as torch's Module: no config
        folder, gguf_file=name, dtype=getattr(torch, dtype)
    )
    # a GGUF-loaded model carries its quantization config, which save_pretrained refuses; the
    # weights are dequantized already
    model.config.quantization_config = None
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    stamp.write_text(json.dumps(want, indent=2) + "\n")
    print(f"converted {gguf.name} -> {out} in {time.perf_counter() - began:.1f}s", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("gguf", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    args = ap.parse_args()
    if not args.gguf.is_file():
        sys.exit(f"no GGUF at {args.gguf}")
    print(convert(args.gguf, args.out, args.dtype))


if __name__ == "__main__":
    main()
