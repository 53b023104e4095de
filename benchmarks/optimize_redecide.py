"""The committed searches decided anew under the optimizer's keep rule (``optimizer.search.keeps``:
the validation mean above the incumbent's by more than one question's worth) from the scores
their records hold: no model is started, no question asked. Where the kept candidate changes,
the record's verdict is dropped and its linked optimized arm unlinked, so
``benchmarks/optimize_hotpot.sh METHOD`` answers the kept overlay on the test questions next.

    .venv/bin/python benchmarks/optimize_redecide.py benchmarks/results/hotpotqa/optimize/*/
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hopgraph.config import Context
from hopgraph.harness.run_folder import QuestionSet
from hopgraph.optimizer.record import preds_in
from hopgraph.optimizer.search import Optimizer, Plan

ARMS = ("hand-written", "optimized")


def redecide(out: Path, test: Path | None = None) -> str:
    """One search decided anew; with ``test``, its verdict written once both arms answered all
    of it (they are answered by the search's own code: ``optimize_hotpot.sh``)."""
    record = json.loads((out / "record.json").read_text())
    plan = Plan(record["agent"], Path(record["splits"]["train"]), out, record["roles"])
    opt = Optimizer(plan, Context(), runner=None)
    changed = opt.redecide()
    line = f"{out}: {'changed' if changed else 'unchanged'}, kept {opt.record['incumbent']}"
    line += f" ({opt.record['stopped']})"
    if test is not None:
        ids = {q.id for q in QuestionSet.read(test).questions}
        answered = [len(ids & set(preds_in(out / "test" / arm))) for arm in ARMS]
        if min(answered) < len(ids):
            return line + f"; verdict not yet: {answered} of {len(ids)} answered"
        opt._verdict(test)
        t = opt.record["test"]
        line += f"; verdict {t['hand_written']} -> {t['optimized']}, sign p {t['sign_p']}"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("searches", nargs="+", type=Path, help="optimize folders (record.json)")
    parser.add_argument("--verdict", type=Path, help="the test questions of their verdict")
    args = parser.parse_args()
    for out in args.searches:
        print(redecide(out, args.verdict))


if __name__ == "__main__":
    main()
