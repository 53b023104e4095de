# Sourced by the HotpotQA benchmarks (after `cd` to the checkout, with $H set): the question file
# and the knowledge base they share under runs/, made once.
[ -f runs/hotpot-q.jsonl ] || $H data convert hotpotqa ../shared/data/hotpotqa/hotpotqa_train.json --jsonl runs/hotpot-q.jsonl
[ -d runs/hotpot-kb/chroma ] || $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json --kb runs/hotpot-kb
# index_triplets: runs/hotpot-kb-tri, the knowledge base of the MMAPG tables, with its triplets
# (Eq. 1-2) read from the committed extraction cache.
index_triplets() {
  $H index ../shared/data/hotpotqa/hotpotqa_train_corpus.json --kb runs/hotpot-kb-tri --triplets \
    --cache benchmarks/results/hotpotqa/triplets.jsonl
}
# unpack_portable: the portable llama.cpp wheel of ../shared/wheels, unpacked once, for the
# scripts that run on it: `PYTHONPATH=$portable` runs the embedded model on it instead of the
# installed (native) build.
unpack_portable() {
  portable=$PWD/runs/llama-portable
  if [ ! -d "$portable/llama_cpp" ]; then
    local wheel
    wheel=$(ls ../shared/wheels/llama_cpp_python-*.whl | head -1)
    mkdir -p "$portable" && .venv/bin/python -m zipfile -e "$wheel" "$portable"
  fi
}
