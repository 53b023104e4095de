# Sourced by the HotpotQA benchmarks (after `cd` to the checkout, with $H set): the question file
# and the knowledge base they share under runs/, made once.
[ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa ../shared/data/hotpotqa/hotpotqa_train.json --out runs/hotpot-q.jsonl
[ -d runs/hotpot-kb/chroma ] || $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json --kb runs/hotpot-kb
