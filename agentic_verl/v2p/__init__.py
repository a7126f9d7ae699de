"""V2P / GUI grounding: the pointer model, its labels and loss, inference, click predictors, test fixtures.

- actions.py     the three pointer tokens, the target action, the grounding prompt (no torch)
- labels.py      Gaussian valley-to-peak labels over the 28x28 patch grid (`v2p_heatmap`, `pointer_label`; no torch)
- loss.py        KL(label || pointer) + valley term; w_lm * CE + w_ptr * L_ptr
- model.py       `V2PForConditionalGeneration` (Qwen2.5-VL + pointer head), `make_pointer_model`, stages
- batch.py       training batches: chat text, answer-only LM labels, pointer labels from the processor's grid
- inference.py   threshold 0.3 x max, 4-connected regions, highest peak, weighted centroid, back to original pixels
- predictors.py  one `predict(image, instruction)` for a V2P model, a Qwen2.5-VL, an OpenAI-compatible endpoint
- synthetic.py   PIL screenshots with known element boxes; tiny.py: a tiny random Qwen2.5-VL + real processor

Data loaders: agentic_verl/data/gui_grounding.py; evaluation: agentic_verl/eval/screenspot.py. Importing this package
imports no torch; model.py / batch.py / predictors do.
"""

from agentic_verl.v2p.actions import POINTER_ACTION, POINTER_TOKENS, grounding_messages
from agentic_verl.v2p.labels import pointer_label, v2p_heatmap

__all__ = ["POINTER_ACTION", "POINTER_TOKENS", "grounding_messages", "pointer_label", "v2p_heatmap"]
