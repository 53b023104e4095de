"""Tiny image-text models built from their transformers configs inside the tests (a few layers,
small dims), so the real loading, indexing and query code runs with no download. Their weights
are random or trained here for seconds; they exist only in tests."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

COLOURS = {
    "red": (220, 30, 30),
    "green": (30, 200, 40),
    "blue": (30, 40, 220),
    "yellow": (230, 220, 30),
}


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
    tower = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
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


def tiny_colpali(folder: Path) -> Path:
    """A 2-layer ColPali (PaliGemma: a SigLIP vision tower over 32x32 images in 8x8 patches,
    so 16 image tokens, and a Gemma text tower; 16-d output vectors) with random weights and a
    word-level tokenizer, saved to ``folder``."""
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
    images = SiglipImageProcessor(size={"height": 32, "width": 32})
    images.image_seq_length = 16
    processor = ColPaliProcessor(image_processor=images, tokenizer=tokenizer)
    tower = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    vlm = PaliGemmaConfig(
        text_config=tower
        | dict(model_type="gemma", vocab_size=len(tokenizer), num_key_value_heads=1, head_dim=16),
        vision_config=tower
        | dict(model_type="siglip_vision_model", image_size=32, patch_size=8, projection_dim=32),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        projection_dim=32,
        hidden_size=32,
    )
    torch.manual_seed(0)
    ColPaliForRetrieval(ColPaliConfig(vlm_config=vlm, embedding_dim=16)).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
