"""benchmarks/mabdqa_batch.py keeps the first walks it reads from a run's traces, so a fresh
clone (traces are not committed) can still replay them."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mabdqa_batch.py"


def load_script():
    spec = importlib.util.spec_from_file_location("mabdqa_batch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_trace(path: Path, judged: dict[str, float], ranking: list[str]) -> None:
    events = [
        {"event": "hypergraph", "subqueries": ["revenue 2019", "the question"]},
        *({"event": "bandit_step", "page_id": p, "s_vlm": s} for p, s in judged.items()),
        {"event": "retrieval", "role": "mabdqa_bandit", "ids": ranking},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"mode": "start", "data": {"id": path.stem}}]
    lines += [{"t": 0.1, "ns": [], "mode": "custom", "data": e} for e in events]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_walks_outlive_their_traces_until_the_code_changes(tmp_path):
    batch = load_script()
    run, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    pages = [f"page-{i:02d}" for i in range(40)]
    predictions = {
        f"doc-{i:04d}": {"id": f"doc-{i:04d}", "code": "a806a2e74e79", "error": None}
        for i in range(12)
    }
    for i, qid in enumerate(predictions):
        judged = {pages[(i + j) % 40]: round(0.05 * j, 4) for j in range(10)}
        write_trace(run / "traces" / f"{qid}.jsonl", judged, pages[i : i + 5])
    first = batch.recorded_walks(run, out, predictions)
    assert len(first) == 12 and first["doc-0003"]["ranking"] == pages[3:8]
    assert first["doc-0003"]["judged"][pages[4]] == 0.05

    for trace in (run / "traces").iterdir():  # a fresh clone: no traces
        trace.unlink()
    assert batch.recorded_walks(run, out, predictions) == first

    predictions["doc-0005"]["code"] = "0123456789ab"  # re-answered by other code: stale walk
    again = batch.recorded_walks(run, out, predictions)
    assert set(again) == set(first) - {"doc-0005"}


def test_keep_walks_needs_no_knowledge_base_and_no_llm(tmp_path, monkeypatch, capsys):
    batch = load_script()
    run, out = tmp_path / "run", tmp_path / "out"
    write_trace(run / "traces" / "doc-0001.jsonl", {"page-03": 0.41, "page-07": 0.12}, ["page-03"])
    (run / "predictions.jsonl").write_text(
        json.dumps({"id": "doc-0001", "code": "a806a2e74e79", "error": None}) + "\n"
    )
    monkeypatch.setattr(
        "sys.argv", ["mabdqa_batch.py", str(run), "--out", str(out), "--keep-walks"]
    )
    batch.main()
    assert "1 walks kept" in capsys.readouterr().out
    assert json.loads((out / "walks.json").read_text())["doc-0001"]["judged"]["page-03"] == 0.41
