"""Which llama-server settings answer concurrent greedy requests alike from run to run (issue
104, item 2; figures, not a test).

    cd benchmarks && ../.venv/bin/python bench_replay.py --kb ../runs/hotpot-kb [--out FILE]

A run here is what a hopgraph run does to a fresh server: start llama-server, send the same 8
examinations as MMAPG makes them (the examiner's prompt over 8 passages of ``runs/hotpot-kb``,
up to 120 tokens of JSON each, temperature 0) from 4 clients at once (or one), stop it. Each
setting is run ``--runs`` times, the settings interleaved run by run so drift on the machine
falls on all of them; one run of the same prompts sent one at a time to a 1-slot server is the
reference. For each setting: how many of the 8 replies were the same in every run, how many
equal the one-at-a-time reply in every run, and the seconds of each run. With ``--only``, the
named settings are measured again into ``--out`` beside the others, against its reference. Run
it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hopgraph.config import Context
from hopgraph.models.chat import ChatModel
from hopgraph.models.llama_server import LlamaServer

SETTINGS: dict[str, tuple[int, tuple[str, ...], int]] = {
    "default (4 slots, a KV cache per slot)": (4, (), 4),
    "4 slots, one unified KV cache": (4, ("--kv-unified",), 4),
    "4 slots, no continuous batching": (4, ("--no-cont-batching",), 4),
    "4 slots, no prompt cache": (4, ("--no-cache-prompt",), 4),
    "4 slots, prompts read 64 tokens a batch": (
        4,
        ("--ubatch-size", "64", "--batch-size", "64"),
        4,
    ),
    "1 slot": (1, (), 4),
    "1 slot, one client (as --concurrency 1 --set slots=1)": (1, (), 1),
}
"""Setting name -> (slots, flags added to hopgraph's own llama-server command, clients)."""


class Server(LlamaServer):
    """hopgraph's llama-server with ``extra`` flags appended (a later flag wins)."""

    def __init__(self, model: str, slots: int, extra: tuple[str, ...]) -> None:
        super().__init__(model, cache_dir=Context().cache_dir, slots=slots)
        self.extra = extra

    def command(self, gguf: Path) -> list[str]:
        return [*super().command(gguf), *self.extra]


def one_run(model: str, slots: int, extra: tuple[str, ...], prompts: list, clients: int) -> dict:
    """A fresh server answers ``prompts`` from ``clients`` at once: the replies and seconds."""
    with Server(model, slots, extra) as s:
        chat = ChatModel(s.base_url, model, backend="llamacpp", timeout=1800)

        def call(messages: list[dict[str, str]]) -> str:
            return chat.complete(messages, role="examiner", max_tokens=120, temperature=0.0)

        began = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            replies = list(pool.map(call, prompts))
        return {"replies": replies, "seconds": round(time.perf_counter() - began, 1)}


def summary(runs: list[dict], reference: list[str]) -> dict:
    """Per prompt, whether every run gave one reply and whether it is the one-at-a-time one."""
    by_prompt = list(zip(*(r["replies"] for r in runs), strict=True))
    return {
        "runs": len(runs),
        "prompts": len(reference),
        "same_in_every_run": sum(len(set(p)) == 1 for p in by_prompt),
        "same_as_one_at_a_time_in_every_run": sum(
            all(x == ref for x in p) for p, ref in zip(by_prompt, reference, strict=True)
        ),
        "replies_differing_from_one_at_a_time": sum(
            x != ref for p, ref in zip(by_prompt, reference, strict=True) for x in p
        ),
        "seconds": [r["seconds"] for r in runs],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--kb", default="runs/hotpot-kb")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="setting names separated by ; (default: all)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from bench_threads import examinations  # beside this file: run as a script

    names = [n for n in SETTINGS if not args.only or n in args.only.split(";")]
    prompts = [
        [{"role": "user", "content": p[0]["content"].split("] ", 1)[1]}]
        for p in examinations(args.kb)
    ]  # the same prompts every run: no nonce
    old = json.loads(args.out.read_text()) if args.only and args.out and args.out.exists() else {}
    reference = old.get("reference") or one_run(args.model, 1, (), prompts, clients=1)
    print(json.dumps({"reference_seconds": reference["seconds"]}), flush=True)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for i in range(args.runs):
        for name in names:
            slots, extra, clients = SETTINGS[name]
            runs[name].append(one_run(args.model, slots, extra, prompts, clients))
            print(
                json.dumps({"setting": name, "run": i + 1, "seconds": runs[name][-1]["seconds"]}),
                flush=True,
            )
    rows = {
        n: {
            "slots": SETTINGS[n][0],
            "flags": list(SETTINGS[n][1]),
            "clients": SETTINGS[n][2],
            **summary(runs[n], reference["replies"]),
        }
        for n in names
    }
    report = {
        "model": args.model,
        "reference": reference,
        "settings": {**old.get("settings", {}), **rows},
        "replies": {
            **old.get("replies", {}),
            **{n: [r["replies"] for r in runs[n]] for n in names},
        },
    }
    print(json.dumps(rows, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


def render(reports: list[dict | None]) -> list[str]:
    """The results page's table: per setting, replies alike in every run and equal to the
    one-at-a-time reply, and the seconds of a run."""
    (rep,) = reports
    if not rep:
        return ["Not measured yet.", ""]
    n = len(rep["reference"]["replies"])
    out = [
        f"{n} examinations as MMAPG makes them ({rep['model']}, temperature 0, up to 120 tokens), "
        "sent by 4 clients at once (unless the setting says one) to a fresh llama-server, "
        "{runs} runs of each "
        "setting interleaved; the reference is the same prompts sent one at a time to a 1-slot "
        f"server ({rep['reference']['seconds']} s).",
        "",
        "| setting | flags | prompts answered alike in every run | equal to one at a time in "
        "every run | replies differing from one at a time | seconds a run |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in rep["settings"].items():
        runs = s["runs"]
        out.append(
            f"| {name} | `{' '.join(s['flags']) or '-'}` | {s['same_in_every_run']} of {n} | "
            f"{s['same_as_one_at_a_time_in_every_run']} of {n} | "
            f"{s['replies_differing_from_one_at_a_time']} of {n * runs} | "
            f"{', '.join(str(x) for x in s['seconds'])} |"
        )
    out[0] = out[0].replace("{runs}", str(runs))
    return [*out, ""]


if __name__ == "__main__":
    main()
