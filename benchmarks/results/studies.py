"""The studies of the results pages (``docs/results/``), in page order, beside the records they
read: which records each compares, the paper's finding it tests, the claims, the settings that
differ from the paper, and the command that reproduces it. The project's own research record,
not library code: ``hopgraph results`` loads this file from the checkout, and the machinery that
renders a study (``hopgraph.presentation.results``) stays in the library. A benchmark's own
report is drawn by the renderer beside the code that writes it (a ``path.py:function`` or
``module:function`` spec)."""

from __future__ import annotations

from hopgraph.evals.grail import grail_files
from hopgraph.presentation.results.spec import BenchTable, Claim, RunTable


def _frugal(method: str, agent: str, title: str, change: str) -> RunTable:
    """One agent's CPU-frugality before / after on the embedded model."""
    return RunTable(
        method,
        title,
        f"Not a paper claim: {change}",
        {"before": f"hotpotqa/frugal/{agent}-before", "after": f"hotpotqa/frugal/{agent}-after"},
        [
            "em",
            "f1",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "depth",
            "seconds",
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
        ],
        [Claim("after", "before", "seconds", lower=True), Claim("after", "before", "f1")],
        command=f"benchmarks/frugal_hotpot.sh before {agent}; "
        f"benchmarks/frugal_hotpot.sh after {agent}",
        target=10,
        by_template=True,
    )


MMLB_EVIDENCE_QUESTIONS = 162  # MMLongBench-Doc questions with evidence pages in the shared data

MABDQA_DEVIATIONS = [
    "m = 10 pages judged per walk, not the paper's 20: a judgement reads a whole page on a "
    "2-core CPU, and 20 doubles the hours of every sitting.",
    "The page judge is P(Yes) that the page shows the facts asked for (`mabdqa_judge=p_yes`), "
    "not the paper's 1-5 rating (App. C.2): the 1.5B model's ratings tie on 65 % of page pairs. "
    "Head to head on 48 questions' pages it ranks evidence no better than the rating (AUC "
    "within question 0.50 vs 0.50, 19 / 19, p = 1; the judges table); these records keep it "
    "because their answers were made with it.",
    "Model qwen2.5-coder-1.5b (text only), not Qwen2.5-VL-7B; pages are their text layer "
    "(`--ocr off`) as one text-encoder vector per line, not ColPali page-image patches.",
    "mmlb_acc is MMLongBench-Doc's rule-based eval_score per answer format applied to the "
    "agent's own short answer; the benchmark first has GPT-4o extract that answer.",
    "Page recall, precision and NDCG count each gold page once (repeated gold pages folded); "
    "NDCG is binary with the ideal min(|gold|, k). Neither paper defines them otherwise.",
    "These records ranked a page the walk did not judge by the question's LI(q, p) and the "
    "mean graph term over all pages, and a judged page with LI(q, p) as its LI term; the code "
    "now ranks every page by Eq. 8 (its own degree and arms, max_j LI(Q_j, p)). The re-ranked "
    "walks table shows what that changes on the walks the record kept; the answers were not "
    "made again.",
]

QDRAG_DEVIATIONS = [
    "HotpotQA text passages with qwen2.5-coder-1.5b, not MMQA / WebQA with an MLLM; N = 5 "
    "contexts kept from 10 retrieved.",
    "Citation recall and precision follow ALCE's rules (first three citations per sentence, "
    "an out-of-range citation scores its sentence 0, pysbd sentences), judged by the same "
    "1.5B model, not AutoAIS's T5-11B NLI model. Records judged before these rules "
    "split sentences at every full stop.",
    "F1 follows HotpotQA's official rule (yes / no / noanswer score only against the same "
    "word) in records scored after 1f84e1a.",
]

MMAPG_METRICS = [
    "em",
    "f1",
    "kept_recall",
    "iterations",
    "hit_cap",
    "planner_repairs",
    "fallbacks",
    "llm_calls",
    "prompt_tokens",
    "seconds",
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
]

MMAPG_CLAIMS = [  # Table 3
    Claim("full", "single path", "f1"),
    Claim("full", "no triplets", "f1"),
    Claim("full", "similarity retrieval", "f1"),
]

MMAPG_DEVIATIONS = [
    "HotpotQA text passages with qwen2.5-coder-1.5b as planner and examiner, not "
    "MultimodalQA / WebQA with GPT-4o; at most 10 planner iterations.",
    "A planner step that repeats a question, a search or an answer is repaired (our rule, for "
    "a small planner that loops): a repeated search becomes an answer from the searches that "
    "found something, in single-path mode from the latest node only (A.7).",
]

REMEASURE = "make native; benchmarks/mmapg_remeasure.sh 40 40"

REMEASURED_DEVIATIONS = [  # MMAPG after its audit's fixes
    MMAPG_DEVIATIONS[0],
    "A planner step that repeats one already taken goes back to the planner once, told which "
    "step it repeats and what that step found (the planner still decides, Stop included); a "
    "second repeat is mended by our rule chain, each mend counted as a fallback: a question "
    "already asked becomes a search for it; a search already made becomes an answer to the "
    "question from the searches that found something (single path: from the latest node); an "
    "answer already given from the same parents, or built only on that answer, becomes Stop "
    "(the paper has none of these rules: its planner alone ends the loop, Sec. 3.3).",
    "A step naming parents that do not exist hangs off the ones that do, else the latest node; "
    "an empty instruction becomes the question; a reply that does not parse becomes a search "
    "for the question while nothing was retrieved, else Stop (each recorded as a repair).",
    "How each question ended (planner Stop, rule chain, cap, budget, malformed) is counted in "
    "the table of endings below; these records predate its recording, so it is derived from "
    "their traces.",
    "EM / F1 score every column's short answer, which the same short-answer call extracts from "
    "each method's reply (rag's and MMAPG's alike).",
]

QDRAG_CLAIMS = [  # the paper's findings on the kept and cited contexts
    Claim("QD-C", "sparse", "kept_recall"),
    Claim("QD-R", "sparse", "kept_recall"),
    Claim("sparse", "dense", "citation_precision"),
    Claim("QD-C", "sparse", "citation_recall"),
    Claim("QD-R", "sparse", "citation_recall"),
]

GRAIL_DEVIATIONS = [
    "Encoders: all-MiniLM-L6-v2 (d = 384) for every item, not BGE-large (d = 1024) with "
    "CLIP ViT-B/32 for images (no CLIP weights reach these machines).",
    "Training: AdamW, batch 32, lr 1e-4 and 100 epochs for the gap module and the adapter, as "
    "B.3, in records made after that default changed (the card names its epochs); older "
    "records trained 20 and 5.",
    "The router is one linear layer over the (adapted) sentence embedding, not a bert-base "
    "encoder fine-tuned for 3 epochs (B.3); HotpotQA's hybrid uses the router trained on "
    "MultimodalQA's type labels (HotpotQA has no aggregation type to route to).",
    "The gap specialist trains on its own (Compose / Compare) instances where a set's "
    "training instances have both kinds (Sec. 5.3), else on all of them (HotpotQA, and "
    "MultimodalQA here, whose compositional questions leave no instance over image titles); "
    "the additive specialist has no weights. Older records trained the gap module on every "
    "type.",
    "Our MultimodalQA copy holds image titles only (no texts or tables), so its completion "
    "rows are ImageListQ and Intersect questions and no Compose or Compare instance.",
]


OPTIMIZED_METRICS = [
    "em",
    "f1",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "fallbacks",
    "seconds",
]
MMAPG_ENDINGS = [
    "end_planner_stop",
    "end_rule_stop",
    "end_iteration_cap",
    "planner_repairs",
    "iterations",
]
"""How MMAPG's loop ended, per question: each ``end_*`` is 0 or 1 (its mean, the share of
questions); ``planner_repairs`` and ``iterations`` are counts (their mean, per question)."""


def _kept_nothing(method: str) -> bool:
    """Whether the committed search ``method`` kept nothing (its test verdict names the
    hand-written prompts as the optimized ones)."""
    import json
    from pathlib import Path

    record = Path(__file__).parent / "hotpotqa" / "optimize" / method / "record.json"
    test = json.loads(record.read_text()).get("test") if record.is_file() else None
    return bool(test and test.get("same_prompts"))


def _optimized(
    method: str,
    roles: str,
    metrics: list[str] = OPTIMIZED_METRICS,
    against_rag: bool = False,
    searched: str = "searched by hopgraph optimize",
) -> list[RunTable | BenchTable]:
    """A ``hopgraph optimize`` search on the 60 training questions, and its verdict
    on the 40 reported ones it never read; ``against_rag`` adds rag's hand-written arm on the
    same 40 (its own search's verdict, the same build) and the claim against it. ``method``
    is the search's folder (and ``optimize_hotpot.sh``'s argument): the agent, then after a
    dash what sets the search apart."""
    agent = method.split("-")[0]
    test = f"hotpotqa/optimize/{method}/test"
    rows = {"hand-written": f"{test}/hand-written", "optimized": f"{test}/optimized"}
    claims = [Claim("optimized", "hand-written", "f1"), Claim("optimized", "hand-written", "em")]
    if against_rag:
        rows["rag"] = "hotpotqa/optimize/rag/test/hand-written"
        claims.append(Claim("optimized", "rag", "f1"))
    command = f"benchmarks/optimize_hotpot.sh {method}"  # on the portable wheel it unpacks
    verdict = (
        []
        if _kept_nothing(method)
        else [
            RunTable(
                "Prompt optimization",
                f"{agent}'s optimized prompts{f' ({method})' if method != agent else ''} "
                "against its hand-written ones"
                + (" and against rag" if against_rag else "")
                + ", on questions the search never read",
                "Not a paper claim: the optimized overlay answers better than the hand-written "
                "prompts.",
                rows,
                metrics,
                claims,
                command=command,
                target=40,
                by_template=True,
            )
        ]
    )  # a search that kept nothing has no second arm: its page says so, and compares nothing
    return [
        BenchTable(
            "Prompt optimization",
            f"{agent}'s {roles}, {searched}",
            "Not a paper claim: DSPy's MIPROv2 reports that bootstrapped demonstrations and "
            "proposed instructions, kept on validation scores, lift small models on HotpotQA.",
            [
                f"hotpotqa/optimize/{method}/record.json",
                f"{test}/hand-written/metrics.json",
                f"{test}/optimized/metrics.json",
            ],
            "hopgraph.optimizer.search:render",
            command=command,
            progress=f"hotpotqa/optimize/{method}/bootstrap",
        ),
        *verdict,
    ]


EVIDENCE_METRICS = [
    "em",
    "f1",
    "kept_recall",
    "citation_recall",
    "citation_precision",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
]
EVIDENCE_DEVIATIONS = [
    "Answered by one pinned revision on llama.cpp's own server (the default engine, its "
    "build in each manifest) with 4 slots at run concurrency 4: about 1 answer in 6 differs "
    "between two runs of the same code there (the replay study), so a single pair's flip is "
    "within that noise; the verdicts are sign tests over every question.",
]

TABLES: list[RunTable | BenchTable] = [
    RunTable(
        "Today's code on the demo",
        "rag, QD-C and MMAPG on the demo's 14 questions, one revision, every trace kept",
        "Not a paper claim: what each method does on the data every user runs first.",
        {"rag": "evidence/demo/rag", "QD-C": "evidence/demo/qdc", "MMAPG": "evidence/demo/mmapg"},
        EVIDENCE_METRICS,
        [Claim("QD-C", "rag", "f1"), Claim("MMAPG", "rag", "f1")],
        command="benchmarks/evidence.sh --pin REV a",
        target=14,
        headline=True,
        deviations=EVIDENCE_DEVIATIONS,
    ),
    RunTable(
        "Today's code on HotpotQA",
        "rag, QD-C and MMAPG on the 80 reported questions, one revision, every trace kept",
        "Each method claims gains over plain retrieval-augmented generation.",
        {
            "rag": "evidence/hotpotqa/rag",
            "QD-C": "evidence/hotpotqa/qdc",
            "MMAPG": "evidence/hotpotqa/mmapg",
        },
        EVIDENCE_METRICS,
        [Claim("QD-C", "rag", "f1"), Claim("MMAPG", "rag", "f1")],
        command="benchmarks/evidence.sh --pin REV b",
        target=100,
        pool=100,
        tuning="hotpotqa/tuning-split.json",
        headline=True,
        deviations=[
            *EVIDENCE_DEVIATIONS,
            "Every method reads HotpotQA text passages with qwen2.5-coder-1.5b, not its "
            "paper's multimodal sets and MLLMs; QD-C keeps N = 5 contexts of 10 retrieved; "
            "MMAPG plans at most 10 iterations over the KB with triplets.",
        ],
    ),
    RunTable(
        "Today's code on MMLongBench-Doc",
        "MAB-DQA bandit + HRRA against plain late interaction, one revision, pages rendered",
        "MAB-DQA's bandit and reflective answering beat plain late-interaction page retrieval.",
        {
            "LI": "evidence/mmlongbench/mabdqa-li",
            "bandit+HRRA": "evidence/mmlongbench/mabdqa-bandit",
        },
        ["recall@1", "recall@3", "recall@5", "mrr@5", "mmlb_acc", "llm_calls", "seconds"],
        [Claim("bandit+HRRA", "LI", "recall@3"), Claim("bandit+HRRA", "LI", "mmlb_acc")],
        command="benchmarks/evidence.sh --pin REV c",
        target=48,
        pool=MMLB_EVIDENCE_QUESTIONS,
        deviations=[*EVIDENCE_DEVIATIONS, *MABDQA_DEVIATIONS],
    ),
    RunTable(
        "Every method",
        "against plain rag on the same HotpotQA questions (what each one buys, and at what price)",
        "Each method claims gains over plain retrieval-augmented generation.",
        {  # the one-fingerprint records on the reported questions
            "rag": "hotpotqa/n100/rag",
            "QD-C": "hotpotqa/n100/qdc",
            "QD-R": "hotpotqa/n100/qdr",
            "MMAPG": "hotpotqa/mmapg/full",
        },
        [*EVIDENCE_METRICS, "prefill_tokens_per_s", "decode_tokens_per_s"],
        [Claim(m, "rag", "f1") for m in ("QD-C", "QD-R", "MMAPG")],
        command="benchmarks/hotpot_100.sh; benchmarks/mmapg_hotpot.sh",
        history="its records were answered 43-54 commits to the methods ago, on "
        "llama-cpp-python's server, and keep no traces; today's code is measured in "
        "[Today's code on HotpotQA](today-s-code-on-hotpotqa-rag-qd-c-and-mmapg-on-the-80-"
        "report-a79125.md), which grows across sessions",
        target={"rag": 100, "QD-C": 60, "QD-R": 78, "MMAPG": 60},  # as in their own tables
        pool=100,  # the HotpotQA slice
        tuning="hotpotqa/tuning-split.json",
        deviations=[
            "Every method reads HotpotQA text passages with qwen2.5-coder-1.5b, not its "
            "paper's multimodal sets and MLLMs; QD-C and QD-R keep N = 5 contexts of 10 "
            "retrieved; MMAPG plans at most 10 iterations and repairs a repeated step (see its "
            "own table).",
            *QDRAG_DEVIATIONS[1:],  # the citation and F1 scoring every column shares
        ],
    ),
    RunTable(
        "A method of one's own",
        "Self-Ask from examples/ (run with --graph) against rag on the same HotpotQA questions",
        "Not a paper claim here: Self-Ask (Press et al., 2022) asks one simpler follow-up "
        "question at a time before answering, for compositional questions.",
        {"rag": "hotpotqa/rag", "Self-Ask": "hotpotqa/self-ask"},
        ["em", "f1", "kept_recall", "kept_contexts", "llm_calls", "prompt_tokens", "seconds"],
        [Claim("Self-Ask", "rag", "f1")],
        command="benchmarks/hotpot_rag.sh 30; benchmarks/self_ask_hotpot.sh 30",
        target=30,
        pool=100,
    ),
    RunTable(
        "What a user would pick instead",
        "LlamaIndex's CitationQueryEngine beside rag and its SubQuestionQueryEngine beside "
        "QD-C, on the same model, KB and HotpotQA questions",
        "Not a paper claim: hopgraph's methods against the engines a LlamaIndex user would "
        "reach for, run with their own prompts through LlamaIndex's OpenAI-compatible LLM "
        "class (benchmarks/peers/llamaindex.py).",
        {  # the one-fingerprint records on the reported questions
            "rag": "hotpotqa/n100/rag",
            "LlamaIndex citation": "hotpotqa/n100/llamaindex-citation",
            "QD-C": "hotpotqa/n100/qdc",
            "LlamaIndex sub-question": "hotpotqa/n100/llamaindex-subquestion",
        },
        [
            "em",
            "f1",
            "kept_recall",
            "kept_contexts",
            "citation_recall",
            "citation_precision",
            "fallbacks",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "seconds",
            "prefill_tokens_per_s",
        ],
        [
            Claim("rag", "LlamaIndex citation", "f1"),
            Claim("rag", "LlamaIndex citation", "citation_precision"),
            Claim("QD-C", "LlamaIndex sub-question", "f1"),
            Claim("QD-C", "LlamaIndex sub-question", "kept_recall"),
            Claim("LlamaIndex sub-question", "QD-C", "prompt_tokens", lower=True),
            Claim("LlamaIndex sub-question", "QD-C", "llm_calls", lower=True),
        ],
        command="benchmarks/hotpot_100.sh; benchmarks/llamaindex_hotpot.sh",
        # the tuning split's 20 included: rag and the citation engine on all 80 reported
        # questions (their citation-precision row needed ~75 at 40), the others stopped at 40
        target={"rag": 100, "LlamaIndex citation": 100, "QD-C": 60, "LlamaIndex sub-question": 60},
        pool=100,
        tuning="hotpotqa/tuning-split.json",
        deviations=[
            "Retrieval for the peers is our KB's (all-MiniLM-L6-v2, top 5 per query) behind a "
            "LlamaIndex retriever, as for ours; the sub-question engine keeps the top 5 of each "
            "sub-question (QD-C keeps 5 in all).",
            "EM / F1 score a short answer that hopgraph's one short-answer call extracts from "
            "each peer's reply, as it does from every hopgraph method's.",
            "A question the sub-question engine cannot decompose (its generator's reply does "
            "not parse, or no sub-question) is answered by its base engine on the raw question "
            "and counted as a fallback, as QD-C falls back to the raw question.",
            "Neither side was tuned on these questions; the peers run LlamaIndex 0.14.25's "
            "default prompts, greedy, with the run's max_tokens and context window.",
            "A citation written as the citation engine labels its contexts, Source n or "
            "[Source n], is read as [n] (ALCE's parser reads [n] only): 21 of its 80 replies "
            "cite so, and until this rule they scored 0.",
        ],
    ),
    RunTable(
        "QDRAG",
        "rag and every QDRAG variant on the reported HotpotQA questions, each column one revision "
        "of its method's code",
        "Decomposition keeps more gold contexts than the raw question and cites better; "
        "reranked contexts are cited more precisely than dense ones (Tables 1-2, 6; Fig. 4c-d). "
        "Each claims a better answer than plain retrieval.",
        {
            "rag": "hotpotqa/n100/rag",
            "dense": "hotpotqa/n100/rag",  # the same two calls (deviations)
            "sparse": "hotpotqa/n100/sparse",
            "QD-C": "hotpotqa/n100/qdc",
            "QD-R": "hotpotqa/n100/qdr",
            "QD-C, no budget": "hotpotqa/n100/qdc-nobudget",
        },
        [
            "em",
            "f1",
            "kept_recall",
            "kept_contexts",
            "citation_recall",
            "citation_precision",
            "invalid_citations",
            "fallbacks",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "seconds",
            "prefill_tokens_per_s",
        ],
        [
            Claim("QD-C", "rag", "f1"),
            Claim("QD-R", "rag", "f1"),
            *QDRAG_CLAIMS,
            Claim("QD-C", "QD-C, no budget", "f1"),  # Table 6's S (its EM)
            Claim("QD-C", "QD-C, no budget", "kept_recall"),
        ],
        command="benchmarks/hotpot_100.sh",
        # the needed-n rule at 40 reported questions: every row but QD-R vs sparse on kept recall
        # (~87 needed, the data's 80 within the estimate's error) needs more than the data
        # holds, so QD-C stops there (20 tuning + 40); sparse and QD-R went on (stopped at 58);
        # rag to all 80 for the peer table's citation-precision row
        target={  # hotpot_100.sh
            "rag": 100,
            "dense": 100,
            "sparse": 78,
            "QD-C": 60,
            "QD-R": 78,
            "QD-C, no budget": 60,
        },
        pool=100,
        deviations=[
            *QDRAG_DEVIATIONS,
            "dense is rag's record: qdrag_mode=dense keeps rag's top 5 and answers with rag's "
            "prompt, and the 20 questions a dense record answered (hotpotqa/n100/dense) came out "
            "identical to rag's, so it was not run further.",
            "QD-C, no budget splits N equally among the raw question and the subquestions "
            "(largest remainder) instead of by the entropy of their scores (Table 6's S); the "
            "paper does not say how its rows without S split N.",
        ],
        tuning="hotpotqa/tuning-split.json",
    ),
    _frugal(
        "QDRAG",
        "qdc",
        "QD-C's CPU cost on the embedded model, before and after the frugality pass",
        "the reranking prompt puts its instruction and passage before the (sub)question, so the "
        "calls on one passage read only their question.",
    ),
    RunTable(
        "QDRAG",
        "QD-C's CPU cost by llama.cpp build on one machine (portable AVX2 wheel vs a build for "
        "this AVX-512 CPU)",
        "Not a paper claim: the same code, model and questions on one host; only the "
        "llama-cpp-python build differs (the prebuilt wheel, or `make native`).",
        {"portable": "hotpotqa/frugal/qdc-portable", "native": "hotpotqa/qdrag-qdc"},
        [
            "em",
            "f1",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "seconds",
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
        ],
        [Claim("native", "portable", "seconds", lower=True), Claim("native", "portable", "f1")],
        command="benchmarks/build_hotpot.sh",
        target=10,
        by_template=True,
        speed_is_compared=True,
    ),
    RunTable(
        "MMAPG",
        "the Adaptive Planning Graph and its Table 3 ablations on the reported HotpotQA "
        "questions, each column one revision of its method's code",
        "The planning graph beats single-path planning; triplets and the retrieval module each "
        "add to it (Table 3).",
        {
            "full": "hotpotqa/mmapg/full",
            "single path": "hotpotqa/mmapg/single-path",
            "no triplets": "hotpotqa/mmapg/no-triplets",
            "similarity retrieval": "hotpotqa/mmapg/similarity",
        },
        MMAPG_METRICS,
        [*MMAPG_CLAIMS, Claim("full", "single path", "kept_recall")],
        command="benchmarks/mmapg_hotpot.sh",
        # the tuning split's 20 included: 40 and 15 reported questions
        target={"full": 60, "single path": 60, "no triplets": 35, "similarity retrieval": 35},
        pool=100,
        deviations=[
            *MMAPG_DEVIATIONS,
            "Full against single path on kept recall is our claim, not Table 3's: it was added "
            "at 30 questions, where full kept more gold passages on 5 and fewer on none (F1: "
            "5 / 5), and the n it then needed (~37) set the stop at 40; its test at 40 reads "
            "those 30 too.",
        ],
        tuning="hotpotqa/tuning-split.json",
    ),
    RunTable(
        "MMAPG after the audit",
        "MMAPG full against rag, re-made after its audit's fixes on the reported HotpotQA "
        "questions: one build, one revision of each method, traces kept",
        "The planning graph beats plain retrieval.",
        {"rag": "hotpotqa/remeasure/rag", "full": "hotpotqa/remeasure/full"},
        MMAPG_METRICS,
        [Claim("full", "rag", "f1")],
        command=REMEASURE,
        target=40,
        pool=80,
        deviations=REMEASURED_DEVIATIONS,
    ),
    RunTable(
        "MMAPG after the audit",
        "MMAPG full against single path, on the same questions, build and revision",
        "The planning graph beats single-path planning (Table 3).",
        {"full": "hotpotqa/remeasure/full", "single path": "hotpotqa/remeasure/single-path"},
        MMAPG_METRICS,
        [Claim("full", "single path", "f1"), Claim("full", "single path", "kept_recall")],
        command=REMEASURE,
        target=40,
        pool=80,
        deviations=REMEASURED_DEVIATIONS,
    ),
    BenchTable(
        "MMAPG after the audit",
        "how each question's loop ended, full and single path",
        "MMAPG's planner ends the loop by its own Stop (Sec. 3.3, Alg. 1).",
        ["hotpotqa/remeasure/endings.json"],
        "benchmarks/mmapg_endings.py:render",
        command="python benchmarks/mmapg_endings.py benchmarks/results/hotpotqa/remeasure/full "
        "benchmarks/results/hotpotqa/remeasure/single-path --out "
        "benchmarks/results/hotpotqa/remeasure/endings.json (from the committed traces, no LLM)",
    ),
    _frugal(
        "MMAPG",
        "mmapg",
        "CPU cost on the embedded model, before and after the frugality pass (no triplets)",
        "examinations put the instruction before the source, each planner prompt extends the "
        "one before it, and a KB without images makes no text / image split call (Eq. 5 has "
        "nothing to route to).",
    ),
    RunTable(
        "MAB-DQA",
        "bandit + HRRA against plain late interaction on MMLongBench-Doc",
        "Bandit retrieval over the page hypergraph finds evidence pages better than "
        "ColPali top-k (page Recall@3 69.5 vs 64.7 with Qwen2.5-VL-7B).",
        {"LI": "mmlongbench/mabdqa-li", "bandit+HRRA": "mmlongbench/mabdqa-bandit"},
        [
            "recall@1",
            "recall@3",
            "recall@5",
            "mrr@5",
            "mmlb_acc",
            "llm_calls",
            "pages_judged",
            "reentries",
            "refined",
            "seconds",
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
        ],
        [Claim("bandit+HRRA", "LI", "recall@3"), Claim("bandit+HRRA", "LI", "mmlb_acc")],
        command="benchmarks/mabdqa_runs.sh 2 10 p_yes",
        target=48,  # two questions per PDF (the first 24: one per PDF)
        pool=MMLB_EVIDENCE_QUESTIONS,
        deviations=MABDQA_DEVIATIONS,
    ),
    BenchTable(
        "MAB-DQA",
        "the committed first walks re-ranked by Eq. 8 for every page",
        "Eq. 8 scores every page by its late interaction with the subqueries, its judgement, "
        "its degree in H and its arms' confidence (Eq. 9), which needs no judgement of it.",
        ["mmlongbench/rerank/rerank.json"],
        "benchmarks/mabdqa_rerank.py:render",
        command="python benchmarks/mabdqa_rerank.py benchmarks/results/mmlongbench/mabdqa-bandit "
        "--walks benchmarks/results/mmlongbench/batch/walks.json --kb runs/mmlb-kb --out "
        "benchmarks/results/mmlongbench/rerank/rerank.json (runs/mmlb-kb and the questions from "
        "benchmarks/mabdqa_runs.sh 2; no LLM but the decompositions the JSON-list bug broke)",
    ),
    BenchTable(
        "MAB-DQA",
        "batched Thompson sampling (ours): b pages judged per round",
        "Not in the paper: its walk judges one page per step, so the critical path grows with "
        "m. Drawing b arms per round and judging their pages together shortens it to "
        "ceil(m / b) rounds.",
        ["mmlongbench/batch/batch.json"],
        "benchmarks/mabdqa_batch.py:render",
        command="python benchmarks/mabdqa_batch.py benchmarks/results/mmlongbench/mabdqa-bandit "
        "--kb runs/mmlb-kb --out benchmarks/results/mmlongbench/batch (needs the run's first "
        "walks, from its traces or the walks.json kept beside batch.json, and "
        "runs/mmlb-kb from benchmarks/mabdqa_runs.sh; the judgements it made live are in "
        "judgements.json)",
    ),
    BenchTable(
        "MAB-DQA",
        "the page judges head to head: P(Yes) against the paper's 1-5 rating",
        "The judge's 1-5 relevance rating of a page is the bandit's reward (App. C.2); ours is "
        "P(Yes) that the page shows the facts asked for. A reward helps the walk as far as it "
        "ranks a question's evidence pages above the pages around them.",
        ["mmlongbench/judges/report.json"],
        "benchmarks/mabdqa_judges.py:render",
        command="python benchmarks/mabdqa_judges.py --questions runs/mmlb-q-spread2.jsonl "
        "--kb runs/mmlb-kb --out benchmarks/results/mmlongbench/judges --set n_threads_batch=2 "
        "(questions and KB from benchmarks/mabdqa_runs.sh 2)",
        deviations=[
            "Model qwen2.5-coder-1.5b (text only), not Qwen2.5-VL-7B: each judge reads the "
            "page's text layer (its first 1,500 characters), not the page image.",
            "The bandit's records keep P(Yes) whatever this table shows: it is measured on "
            "their questions, so switching on it would tune on reported questions.",
        ],
    ),
    RunTable(
        "MAB-DQA",
        "prefix-friendly prompts on the embedded CPU model, before and after",
        "Not a paper claim: the pages the question reflection reads open the answer's prompt "
        "too, and each judgement starts with its question, so llama.cpp reuses the KV cache.",
        {"before": "mmlongbench/prefix/before", "after": "mmlongbench/prefix/after"},
        [
            "recall@3",
            "mmlb_acc",
            "llm_calls",
            "prompt_tokens",
            "depth",
            "seconds",
            "prefill_tokens_per_s",
            "decode_tokens_per_s",
        ],
        [Claim("after", "before", "seconds", lower=True)],
        command="benchmarks/prefix_mmlb.sh",
        target=10,
        by_template=True,
    ),
    BenchTable(
        "MAB-DQA",
        "OCR for pages without a text layer (MMLongBench-Doc)",
        "MAB-DQA reads page images with ColPali; without a page-image model, slides and scans "
        "are only as visible as their text, so OCR is what lets retrieval see them.",
        ["mmlongbench/ocr/pages.json"]
        + [f"mmlongbench/ocr/li-{s}-{m}.json" for s in ("spread", "all") for m in ("off", "auto")],
        "benchmarks/bench_mabdqa.py:render_ocr",
        command="benchmarks/ocr_mmlb.sh",
    ),
    BenchTable(
        "MAB-DQA",
        "a ColPali-sized page embedder on the GPU and on the CPU",
        "Not a paper claim: MAB-DQA embeds every page with ColPali (a 3B model); on a GPU "
        "machine that must run on the GPU, which the page and image embedders did not.",
        ["mmlongbench/page-embedder-gpu.json"],
        "benchmarks/bench_page_embedder.py:render",
        command="python benchmarks/bench_page_embedder.py --out "
        "benchmarks/results/mmlongbench/page-embedder-gpu.json  # on a GPU machine",
    ),
    BenchTable(
        "Knowledge base",
        "re-indexing a folder whose files change",
        "Not a paper claim: re-indexing an unchanged corpus should cost under 5 % of the first "
        "index, and a changed file only its own items.",
        ["kb-reindex.json"],
        "benchmarks/bench_kb.py:render_reindex",
        command="python benchmarks/bench_kb.py --only-reindex --out "
        "benchmarks/results/kb-reindex.json",
    ),
    BenchTable(
        "Knowledge base",
        "search cost as the KB grows, local and on a Chroma server",
        "Not a paper claim: no operation's cost may grow with the KB beyond the engine's own; "
        "hopgraph's search within 1.5x of the same Chroma query at 1M vectors.",
        ["kb-scale.json"],
        "benchmarks/bench_kb_scale.py:render",
        command="python benchmarks/bench_kb_scale.py --out benchmarks/results/kb-scale.json",
    ),
    BenchTable(
        "GRAIL",
        "with a trained adapter: the KB's projection in the engine, not in each process",
        "Not a paper claim: steering with a trained alignment adapter must not load the KB into "
        "every process that steers.",
        ["grail-projected.json"],
        "benchmarks/bench_grail_projected.py:render",
        command="python benchmarks/bench_grail_projected.py --out "
        "benchmarks/results/grail-projected.json",
    ),
    BenchTable(
        "Every method",
        "calls, depth and throughput against a latency model of a batching GPU server",
        "Not a paper claim: on a GPU server the speed a user sees depends on the LLM rounds one "
        "after another on a question's path and on how throughput grows with run concurrency.",
        ["agents-latency-model.json"],
        "benchmarks/bench_agents.py:render",
        command="python benchmarks/bench_agents.py --out "
        "benchmarks/results/agents-latency-model.json",
    ),
    BenchTable(
        "Every method",
        "throughput on vLLM's CPU build against llama.cpp, the same model on this machine",
        "Not a paper claim: what the latency model above only modelled, measured on a real vLLM "
        "server (continuous batching) against the embedded llama.cpp server (one request at a "
        "time).",
        ["serving/vllm-cpu.json"],
        "benchmarks/bench_vllm.py:render",
        command="make vllm && python benchmarks/bench_vllm.py --out "
        "benchmarks/results/serving/vllm-cpu.json",
    ),
    BenchTable(
        "Every method",
        "the embedded engines side by side: llama.cpp's own llama-server against "
        "llama-cpp-python's server",
        "Not a paper claim: llama-server's parallel slots and prefix reuse answer more questions "
        "a minute than a server that takes one request at a time (issue 104's goals: MMAPG "
        "1.5x, QD-C 1.3x, rag at run concurrency 4 1.2x), with the same answers.",
        ["engine/summary.json"],
        "benchmarks/engine_compare.py:render",
        command="benchmarks/engine_side_by_side.sh && python benchmarks/engine_compare.py",
        deviations=[
            "One run of each record, the two engines one after the other (not interleaved by "
            "question): wall time is the whole record's, on a 2-core machine where other work "
            "ran beside it at times (load before each run in times.jsonl).",
        ],
    ),
    BenchTable(
        "Every method",
        "the embedded engine: concurrent greedy requests replayed on a fresh llama-server",
        "Not a paper claim: no llama-server setting tried answers concurrent greedy requests "
        "alike from run to run (issue 104, item 2); requests sent one at a time to one slot "
        "do.",
        ["engine/replay.json"],
        "benchmarks/bench_replay.py:render",
        command="cd benchmarks && ../.venv/bin/python bench_replay.py --kb ../runs/hotpot-kb "
        "--runs 3 --out results/engine/replay.json",
        deviations=[
            "Three runs of each setting on a 2-core machine with one thread per server; the "
            "prompts are 8, so a count moves in steps of one prompt. The one-client row was "
            "measured afterwards (`--only`) against the same reference, with short tests "
            "running beside it at times: its seconds are not comparable with the others'.",
        ],
    ),
    BenchTable(
        "PolarMem",
        "the knowledge pathway on planted negations",
        "Negative knowledge kept as NOT_HAS edges means a memory that lacks a thing is "
        "never returned as having it.",
        ["polarmem/negations-before.json", "polarmem/negations-after.json"],
        "benchmarks/bench_polar.py:render_negations",
        command="python benchmarks/bench_polar.py --out benchmarks/results/polarmem/"
        "negations-after.json negations --texts 60",
    ),
    BenchTable(
        "PolarMem",
        "logic-first recall on planted-negation scenes at 10k and 100k",
        "Logic-first recall (Algorithm 1) suppresses every memory that violates the query's "
        "constraints, however similar it is; similarity recall (Eq. 2) does not.",
        ["polarmem/scenes.json"],
        "benchmarks/bench_polar.py:render_scenes",
        command="python benchmarks/bench_polar.py --out benchmarks/results/polarmem/scenes.json "
        "scenes --sizes 10000 100000",
    ),
    BenchTable(
        "PolarMem",
        "the text benchmark on HotpotQA passages, before and after the polarity fix",
        "Negative knowledge kept as NOT_HAS edges means a memory that lacks a thing is "
        "never returned as having it.",
        [f"polarmem/text-{t}{n}.json" for t in ("", "asserted-") for n in ("before", "after")],
        "benchmarks/bench_polar.py:render_text",
        command="hopgraph memory ingest ../shared/data/hotpotqa/hotpotqa_train_corpus.json "
        "--limit 40 --memory runs/polar-hotpot; python benchmarks/bench_polar.py --out "
        "benchmarks/results/polarmem/text-after.json text runs/polar-hotpot [--old-reading] "
        "[--truth asserted]",
    ),
    BenchTable(
        "GRAIL",
        "query steering with a fair additive baseline",
        "Additive steering has negative Δesc and GRAIL positive; GRAIL beats additive on "
        "compositional questions.",
        grail_files(),
        "hopgraph.evals.grail:render_tables",
        command="benchmarks/grail_runs.sh",
        deviations=GRAIL_DEVIATIONS,
    ),
    *_optimized("rag", "answer and short-answer roles"),
    *_optimized("qdrag", "QD-C's decomposition role"),
    *_optimized("mmapg", "planner role", [*OPTIMIZED_METRICS, *MMAPG_ENDINGS], against_rag=True),
    *_optimized(
        "rag-wide",
        "short-answer role",
        searched="searched wider (6 candidates a round raced on a minibatch of 8)",
    ),
    *_optimized(
        "rag-answer",
        "long-answer role",
        searched="searched wider (6 candidates a round raced on a minibatch of 8)",
    ),
    *_optimized(
        "qdrag-wide",
        "QD-C's decomposition role",
        searched="searched wider (4 candidates a round raced on a minibatch of 6)",
    ),
]
