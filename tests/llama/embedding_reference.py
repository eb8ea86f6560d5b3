"""Sentence embeddings of all-MiniLM-L6-v2 computed straight from its safetensors weights with
numpy, as sentence-transformers computes them, to check the GGUF that `embedding_model.py`
writes against (tests/behaviour/tool_search_hybrid.rs): BERT's tokenizer (lowercasing, accents
stripped, punctuation split, WordPiece with `##` pieces, `[CLS] ... [SEP]`, at most
`max_seq_length` tokens), the BERT encoder (absolute positions, post-layer-norm, exact GELU),
mean pooling over the tokens and L2 normalisation.

Nothing here comes from llama.cpp: the tokenizer follows Hugging Face's `BertTokenizer`
(`BasicTokenizer` + `WordpieceTokenizer`) and the forward pass `BertModel`.

Usage: embedding_reference.py --model DIR < texts.json > answers.json
(`texts.json`: a JSON array of strings; the answer: `[{"tokens": [...], "embedding": [...]}]`)
"""

import argparse
import json
import math
import sys
import unicodedata
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file


def is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_chinese(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F
    )


def basic_words(text: str) -> list[str]:
    """`BasicTokenizer` with lower casing: cleaned, lowercased, accents stripped, split on
    whitespace and around punctuation and CJK characters."""
    cleaned = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD:
            continue
        category = unicodedata.category(char)
        if char in "\t\n\r" or category == "Zs":
            cleaned.append(" ")
        elif category in ("Cc", "Cf"):
            continue
        elif is_chinese(code):
            cleaned.append(f" {char} ")
        else:
            cleaned.append(char)
    words = []
    for word in "".join(cleaned).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(char for char in word if unicodedata.category(char) != "Mn")
        current = ""
        for char in word:
            if is_punctuation(char):
                if current:
                    words.append(current)
                words.append(char)
                current = ""
            else:
                current += char
        if current:
            words.append(current)
    return words


def wordpiece(word: str, vocab: dict[str, int]) -> list[int]:
    """Greedy longest-match-first pieces of one word, or `[UNK]` when it cannot be split."""
    if len(word) > 100:
        return [vocab["[UNK]"]]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(vocab[piece])
                break
            end -= 1
        if end == start:
            return [vocab["[UNK]"]]
        start = end
    return pieces


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


ERF = np.vectorize(math.erf)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + ERF(x / math.sqrt(2.0)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, type=Path)
    args = parser.parse_args()
    model: Path = args.model
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    max_tokens = json.loads((model / "sentence_bert_config.json").read_text())["max_seq_length"]
    vocab = {
        line.rstrip("\n"): index
        for index, line in enumerate((model / "vocab.txt").read_text(encoding="utf-8").splitlines(True))
    }
    w = {name: value.astype(np.float64) for name, value in load_file(str(model / "model.safetensors")).items()}
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    answers = []
    for text in json.load(sys.stdin):
        ids = [vocab["[CLS]"]]
        for word in basic_words(text):
            ids.extend(wordpiece(word, vocab))
        ids = ids[: max_tokens - 1] + [vocab["[SEP]"]]
        n = len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for layer in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}"
            split = lambda t: t.reshape(n, heads, -1).transpose(1, 0, 2)  # noqa: E731
            q = split(dense(x, f"{p}.attention.self.query"))
            k = split(dense(x, f"{p}.attention.self.key"))
            v = split(dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = layer_norm(
                dense(context, f"{p}.attention.output.dense") + x,
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
                eps,
            )
            hidden = gelu(dense(x, f"{p}.intermediate.dense"))
            x = layer_norm(
                dense(hidden, f"{p}.output.dense") + x,
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
                eps,
            )
        pooled = x.mean(axis=0)
        pooled /= np.linalg.norm(pooled)
        answers.append({"tokens": ids, "embedding": [float(value) for value in pooled]})
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
