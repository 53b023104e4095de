"""Every request body hopgraph sends, read by vLLM's own request model and turned into its own
sampling parameters, as its server would (vLLM 0.32's CPU build in ``.venv-vllm``, made by
``make vllm``; skipped, saying so, where it is absent). Nothing of vLLM is copied here: the
bodies go to the installed package in its own interpreter."""

import json
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel
from scripted import ScriptedEndpoint, completion

from hopgraph.models.chat import user

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="vLLM is not installed here (make vllm)"),
]

QWEN_GENERATION_CONFIG = {
    "top_k": 1,
    "top_p": 0.001,
    "repetition_penalty": 1.05,
    "temperature": 0.1,
}
"""What vLLM's default --generation-config auto takes from Qwen2.5-VL for fields left out."""

READ = """
import json, sys
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
defaults = json.loads(sys.argv[2])
out = []
for body in json.load(open(sys.argv[1])):
    req = ChatCompletionRequest.model_validate(body)
    sp = req.to_sampling_params(body.get("max_tokens") or 16, defaults)
    out.append({"top_k": sp.top_k, "top_p": sp.top_p, "temperature": sp.temperature,
                "repetition_penalty": sp.repetition_penalty, "logprobs": sp.logprobs,
                "structured": sp.structured_outputs is not None})
print(json.dumps(out))
"""


class Capital(BaseModel):
    country: str
    capital: str


def bodies() -> list[dict]:
    """One of each kind of call, as hopgraph sends it to a vLLM endpoint."""
    from PIL import Image

    ep = ScriptedEndpoint(
        [
            completion("Paris"),
            completion("a plan"),
            '{"country": "France", "capital": "Paris"}',
            completion("Yes", top=[("Yes", -0.1), ("No", -2.3)]),
            completion("red"),
        ]
    )
    m = ep.model_client()
    m.complete([user("Capital of France?")], role="r", template="t")
    m.complete([user("Plan it.")], role="r", template="t", temperature=0.8)  # QDARF's sampling
    m.structured([user("France as JSON.")], Capital, role="r", template="t")
    m.p_yes([user("Is Paris in France?")], role="r", template="t")
    tiny = Image.new("RGB", (12, 3000), "red")  # padded to Qwen2.5-VL's limits before it goes
    m.complete([user("Colour?", images=[tiny])], role="r", template="t")
    return ep.requests


def test_vllm_reads_every_request_as_meant(tmp_path):
    sent = bodies()
    (tmp_path / "bodies.json").write_text(json.dumps(sent))
    out = subprocess.run(
        [
            str(VLLM_PYTHON),
            "-c",
            READ,
            str(tmp_path / "bodies.json"),
            json.dumps(QWEN_GENERATION_CONFIG),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    read = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(read) == len(sent)
    # the model's generation_config fills nothing: no top-k cut, no penalty, top_p 1
    assert all(r["top_k"] in (0, -1) and r["repetition_penalty"] == 1.0 for r in read)
    assert all(r["top_p"] == 1.0 for r in read)
    assert read[1]["temperature"] == 0.8 and read[0]["temperature"] == 0.0
    assert read[2]["structured"] and read[3]["logprobs"] == 20
