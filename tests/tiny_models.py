"""Tiny image-text models built from their transformers configs inside the tests (a few layers,
small dims), so the real loading, indexing and query code runs with no download. Their weights
are random or trained here for seconds; they exist only in tests."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

COLOURS = {
    "red": (220, 30, 30),
    "green": (30, 200, 40),
    "blue": (30, 40, 220),
    "yellow": (230, 220, 30),
}
TINY_TOWER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
"""Each tower of the tiny models: 2 layers of 32 dims."""


def byte_level_vocab() -> dict[str, int]:
    """A CLIP BPE vocabulary with no merges: every byte symbol, alone and word-final."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    symbols = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(symbols)}
    vocab |= {c + "</w>": len(symbols) + i for i, c in enumerate(symbols)}
    vocab |= {"<|startoftext|>": len(vocab), "<|endoftext|>": len(vocab) + 1}
    return vocab


def square(colour: str, size: int = 64) -> Image.Image:
    return Image.new("RGB", (size, size), COLOURS[colour])


def trained_tiny_clip(folder: Path, steps: int = 60) -> Path:
    """A 2-layer CLIP (32-d towers, 16-d projection), trained for ``steps`` contrastive steps
    to pair each coloured square with the caption "a <colour> square", saved to ``folder``."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTokenizer,
    )

    vocab = byte_level_vocab()
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    end = vocab["<|endoftext|>"]
    tower = TINY_TOWER
    config = CLIPConfig(
        text_config=tower
        | dict(
            vocab_size=len(vocab),
            max_position_embeddings=32,
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=end,
            pad_token_id=end,
        ),
        vision_config=tower | dict(image_size=32, patch_size=8),
        projection_dim=16,
    )
    torch.manual_seed(0)
    model = CLIPModel(config)
    processor = CLIPProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=tokenizer,
    )
    batch = processor(
        text=[f"a {c} square" for c in COLOURS],
        images=[square(c) for c in COLOURS],
        return_tensors="pt",
        padding=True,
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = model(**batch, return_loss=True).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def tiny_colpali(
    folder: Path,
    *,
    vision: dict | None = None,
    text: dict | None = None,
    image_size: int = 32,
    patch_size: int = 8,
    projection_dim: int = 32,
    embedding_dim: int = 16,
    dtype: str = "float32",
) -> Path:
    """A ColPali (PaliGemma: a SigLIP vision tower, a Gemma text tower) with random weights and
    a word-level tokenizer, saved to ``folder``. By default 2 layers a tower over 32x32 images
    in 8x8 patches (16 image tokens), 16-d output vectors; the keyword sizes build larger ones
    (benchmarks/bench_page_embedder.py builds ColPali-v1.3's)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        ColPaliConfig,
        ColPaliForRetrieval,
        ColPaliProcessor,
        PaliGemmaConfig,
        PreTrainedTokenizerFast,
        SiglipImageProcessor,
    )

    words = ["<pad>", "<eos>", "<bos>", "<unk>", "question", ":", "describe", "the", "image"]
    words += [
        "what",
        "was",
        "revenue",
        "in",
        "2021",
        "which",
        "page",
        "shows",
        "a",
        "red",
        "chart",
        "blue",
        "table",
    ]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    images = SiglipImageProcessor(size={"height": image_size, "width": image_size})
    images.image_seq_length = (image_size // patch_size) ** 2
    processor = ColPaliProcessor(image_processor=images, tokenizer=tokenizer)
    text = text or TINY_TOWER | dict(num_key_value_heads=1, head_dim=16)
    vlm = PaliGemmaConfig(
        text_config=text | dict(model_type="gemma", vocab_size=len(tokenizer)),
        vision_config=(vision or TINY_TOWER)
        | dict(
            model_type="siglip_vision_model",
            image_size=image_size,
            patch_size=patch_size,
            projection_dim=projection_dim,
        ),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        projection_dim=projection_dim,
        hidden_size=text["hidden_size"],
    )
    torch.manual_seed(0)
    config = ColPaliConfig(vlm_config=vlm, embedding_dim=embedding_dim)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = ColPaliForRetrieval(config).to(getattr(torch, dtype))
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}"
    "{% if p.type in ('image', 'image_url') %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ p.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's chat layout with its image placeholder, written for these tests."""


def tiny_qwen25_vl(folder: Path) -> Path:
    """A Qwen2.5-VL (2 text layers of 64 dims, a 2-block vision tower in 14-px patches merged
    2x2) with random weights, a byte-level BPE tokenizer with Qwen's special tokens and no
    merges, and Qwen's image processor (the PIL one: no torchvision), saved to ``folder`` as
    a Hugging Face model folder that vLLM serves."""
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2Tokenizer,
    )
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    vocab |= {t: len(vocab) + i for i, t in enumerate(QWEN_SPECIALS)}
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=[],
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    tokenizer.add_special_tokens({"additional_special_tokens": QWEN_SPECIALS})
    tokenizer.chat_template = QWEN_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},  # head_dim 16 / 2
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            bos_token_id=None,
            tie_word_embeddings=True,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=56,
            fullatt_block_indexes=[1],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    Qwen2_5_VLForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(QWEN_TEMPLATE)
    pixels = {"min_pixels": 28 * 28, "max_pixels": 112 * 112}  # at most 16 merged tokens
    (folder / "preprocessor_config.json").write_text(
        json.dumps(
            {
                "image_processor_type": "Qwen2VLImageProcessorPil",
                "processor_class": "Qwen2_5_VLProcessor",
                "patch_size": 14,
                "merge_size": 2,
                "temporal_patch_size": 2,
                **pixels,
                "size": {
                    "shortest_edge": pixels["min_pixels"],
                    "longest_edge": pixels["max_pixels"],
                },
                "image_mean": [0.48145466, 0.4578275, 0.40821073],
                "image_std": [0.26862954, 0.26130258, 0.27577711],
                "do_rescale": True,
                "rescale_factor": 1 / 255,
                "do_normalize": True,
                "do_resize": True,
                "do_convert_rgb": True,
            }
        )
    )
    return folder
