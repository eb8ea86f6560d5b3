"""Writes a tiny Qwen2 model for llama-server, for the real-server tests: no trained weights.

The tokenizer is the real one llama.cpp ships as a vocab-only GGUF (`ggml-vocab-qwen2.gguf`),
with Qwen2.5's added tokens (`<tool_call>`, `</tool_call>`, ...) in the places Qwen2.5 has
them, and the chat template is Qwen2.5's (`Qwen-Qwen2.5-7B-Instruct.jinja`) with one change (see
`without_newline_after_tool_call`), so llama-server renders prompts, parses tool calls and
builds tool-call grammars as it does for Qwen2.5.

The weights are random (fixed seed) and small: one layer, 32 wide. Every ordinary token is about
equally likely; a few are set by hand so that a random model still finishes what the tests ask
of it, whatever the seed:

- Before a tool result is in the conversation, `<tool_call>` opens the answer wherever the
  grammar lets the model choose (with `tool_choice` forcing a call, the server's grammar allows
  free text before the call but not the end of the turn); the grammar built from the tool's
  schema keeps the arguments valid; `</tool_call>` closes the call rather than a second call
  starting beside it; and the end of the turn follows.
- Once a tool result is in the conversation (the `_response` piece of its `<tool_response>`
  text), one attention head sees it and takes `<tool_call>` out of reach, so the model answers
  with a few random tokens and ends its turn (each step ends it with ~15% odds).
- Runs of whitespace are out of reach, so the grammar's optional spaces stay empty, and longer
  tokens are likelier (up to 10 bytes), so the grammar's literals come in a few tokens.

The head: a constant dimension `C` in every token's embedding and a flag dimension `F` in the
`_response` piece's alone; the query reads `C` and the key reads `F` on the slowest rope pair
(the rope frequency base is so large that positions barely rotate them), so every position
after a tool result attends to it, and the value copies `F` into a signal dimension `S` that the
steering output rows read.

The sampling defaults written into the model (no top-k, top-p or min-p cut, temperature 1) keep
that distribution as it is instead of narrowing it to the likeliest token.

Usage: tiny_model.py --vocab ggml-vocab-qwen2.gguf --template Qwen-Qwen2.5-7B-Instruct.jinja --out m.gguf
"""

import argparse
import math

import numpy as np

import gguf

ARCH = "qwen2"
EMBED = 32
CONTEXT = 8192
NOISE = EMBED - 3
C, F, S = EMBED - 3, EMBED - 2, EMBED - 1
# Where the query and key put their one dimension: the last rope pair, the slowest to rotate.
QK = EMBED // 2 - 1
SEED = 20240528
# The length, in bytes, from which a token gets no more likely for being longer.
LONG = 10

# Qwen2.5's added tokens and where its tokenizer has them (the vocab-only file has padding
# there); the two tool-call tags are plain (user-defined) tokens, the others control tokens.
QWEN25_ADDED = {
    151646: "<|object_ref_start|>", 151647: "<|object_ref_end|>", 151648: "<|box_start|>",
    151649: "<|box_end|>", 151650: "<|quad_start|>", 151651: "<|quad_end|>",
    151652: "<|vision_start|>", 151653: "<|vision_end|>", 151654: "<|vision_pad|>",
    151655: "<|image_pad|>", 151656: "<|video_pad|>", 151657: "<tool_call>",
    151658: "</tool_call>", 151659: "<|fim_prefix|>", 151660: "<|fim_middle|>",
    151661: "<|fim_suffix|>", 151662: "<|fim_pad|>", 151663: "<|repo_name|>",
    151664: "<|file_sep|>",
}
USER_DEFINED = {"<tool_call>", "</tool_call>"}


def without_newline_after_tool_call(template: str) -> str:
    """Qwen2.5's template with calls written `<tool_call>{...}` instead of `<tool_call>\\n{...}`.

    llama-server's grammar lets free text come before a call even when one is required, until
    the text that opens a call; with the newline, a model would have to pick `<tool_call>` and
    then the newline, and every optional space of the arguments would take the newline too.
    """
    patched = template.replace("""'\\n<tool_call>\\n{"name": "'""", """'\\n<tool_call>{"name": "'""")
    patched = patched.replace('<tool_call>\\n{\\"name\\"', '<tool_call>{\\"name\\"')
    if "<tool_call>\\n" in patched:
        raise SystemExit("the chat template does not write tool calls as Qwen2.5's does")
    return patched


def rms(vector: np.ndarray) -> float:
    return float(np.sqrt(np.mean(vector * vector) + 1e-6))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--template", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    reader = gguf.GGUFReader(args.vocab)
    tokens = reader.get_field("tokenizer.ggml.tokens").contents()
    types = reader.get_field("tokenizer.ggml.token_type").contents()
    for index, text in QWEN25_ADDED.items():
        tokens[index] = text
        types[index] = (
            gguf.TokenType.USER_DEFINED if text in USER_DEFINED else gguf.TokenType.CONTROL
        )
    vocab = len(tokens)
    tool_call = tokens.index("<tool_call>")
    tool_call_end = tokens.index("</tool_call>")
    end_of_turn = tokens.index("<|im_end|>")
    response = tokens.index("_response")

    writer = gguf.GGUFWriter(args.out, ARCH)
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer.") or field.name == "tokenizer.chat_template":
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == "tokenizer.ggml.tokens":
            value = tokens
        elif field.name == "tokenizer.ggml.token_type":
            value = types
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    with open(args.template, encoding="utf-8") as f:
        writer.add_chat_template(without_newline_after_tool_call(f.read()))

    writer.add_name("tool-core tiny qwen2 (random weights)")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(1)
    writer.add_feed_forward_length(EMBED)
    writer.add_head_count(1)
    writer.add_head_count_kv(1)
    writer.add_rope_freq_base(1e12)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_sampling_top_k(0)
    writer.add_sampling_top_p(1.0)
    writer.add_sampling_min_p(0.0)
    writer.add_sampling_temp(1.0)

    rng = np.random.default_rng(SEED)
    embedding = np.zeros((vocab, EMBED), dtype=np.float32)
    embedding[:, :NOISE] = rng.standard_normal((vocab, NOISE)) * 0.02
    embedding[:, C] = 1.0
    embedding[response, F] = 1.0

    # The norms the layer sees: an ordinary token, the flagged one, and an ordinary token once
    # the head has copied the flag in (noise at its expected size).
    noise = np.full(NOISE, 0.02, dtype=np.float32)
    plain = np.concatenate([noise, [1.0, 0.0, 0.0]]).astype(np.float32)
    flagged = np.concatenate([noise, [1.0, 1.0, 0.0]]).astype(np.float32)
    n_c, n_f = 1.0 / rms(plain), 1.0 / rms(flagged)
    head = EMBED
    # Score of a flagged key, against 0 for every other: far beyond any context length.
    qk = math.sqrt(28.0 * math.sqrt(head) / (n_c * n_f))
    q = np.zeros((EMBED, EMBED), dtype=np.float32)
    k = np.zeros((EMBED, EMBED), dtype=np.float32)
    v = np.zeros((EMBED, EMBED), dtype=np.float32)
    o = np.zeros((EMBED, EMBED), dtype=np.float32)
    q[QK, C] = qk
    k[QK, F] = qk
    v[0, F] = 1.0
    o[S, 0] = 1.0
    signal = n_f  # the value the head copies
    seen = np.concatenate([noise, [1.0, 0.0, signal]]).astype(np.float32)
    quiet_c = 1.0 / rms(plain)
    seen_c, seen_s = 1.0 / rms(seen), signal / rms(seen)

    # Output rows: random over the noise dimensions (nearly flat), plus a bonus for long tokens
    # (so that the grammar's literals come in a few long tokens, not many short ones), and by
    # hand for the few that steer. `quiet`: the logit before a tool result; `seen`: after one.
    output = np.zeros((vocab, EMBED), dtype=np.float32)
    output[:, :NOISE] = rng.standard_normal((vocab, NOISE))
    bonus = np.array([min(len(text), LONG) for text in tokens], dtype=np.float32)
    output[:, C] = bonus / quiet_c
    output[:, S] = (bonus - seen_c * output[:, C]) / seen_s

    def steer(token: int, quiet: float, seen: float) -> None:
        output[token, :] = 0.0
        output[token, C] = quiet / quiet_c
        output[token, S] = (seen - seen_c * output[token, C]) / seen_s

    # Out of reach always: runs of whitespace (the grammar's optional spaces stay empty), a
    # closing brace with a comma (a call's arguments are not followed by a second call in the
    # same block), and the control and unused tokens.
    kept = {tool_call, tool_call_end, end_of_turn}
    for token, text in enumerate(tokens):
        whitespace = text and all(c in "\u0120\u010a\u0109\u010d" for c in text)
        control = types[token] in (gguf.TokenType.CONTROL, gguf.TokenType.UNUSED)
        if token not in kept and (whitespace or ("}" in text and "," in text) or control):
            steer(token, quiet=-30.0, seen=-30.0)
    # The weight of every other token together, as a logit.
    ordinary = np.ones(vocab, dtype=bool)
    ordinary[list(kept)] = False
    ordinary &= output[:, C] >= 0
    rest = float(np.log(np.exp(bonus[ordinary].astype(np.float64)).sum()))
    # Before a tool result: where the grammar leaves the choice open (the start of the answer),
    # `<tool_call>` all but surely; where a call may be followed by another in the same block,
    # `</tool_call>` rather than the few short tokens that would go on; after a complete call,
    # the end of the turn. After a tool result, the first two are out of reach and the end of
    # the turn is ~15% of a step (a few words, then the end).
    steer(tool_call, quiet=rest + 6.0, seen=-30.0)
    steer(tool_call_end, quiet=rest - 4.0, seen=-30.0)
    steer(end_of_turn, quiet=rest + 10.0, seen=rest + math.log(0.15 / 0.85))

    def add(name: str, data: np.ndarray, quantize: bool = False) -> None:
        if quantize:
            writer.add_tensor(
                name,
                gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0),
                raw_dtype=gguf.GGMLQuantizationType.Q8_0,
            )
        else:
            writer.add_tensor(name, data)

    zeros = np.zeros((EMBED, EMBED), dtype=np.float32)
    add("token_embd.weight", embedding, quantize=True)
    add("output.weight", output, quantize=True)
    add("output_norm.weight", np.ones(EMBED, dtype=np.float32))
    add("blk.0.attn_norm.weight", np.ones(EMBED, dtype=np.float32))
    add("blk.0.attn_q.weight", q)
    add("blk.0.attn_q.bias", np.zeros(EMBED, dtype=np.float32))
    add("blk.0.attn_k.weight", k)
    add("blk.0.attn_k.bias", np.zeros(EMBED, dtype=np.float32))
    add("blk.0.attn_v.weight", v)
    add("blk.0.attn_v.bias", np.zeros(EMBED, dtype=np.float32))
    add("blk.0.attn_output.weight", o)
    add("blk.0.ffn_norm.weight", np.ones(EMBED, dtype=np.float32))
    add("blk.0.ffn_gate.weight", zeros)
    add("blk.0.ffn_up.weight", zeros)
    add("blk.0.ffn_down.weight", zeros)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
