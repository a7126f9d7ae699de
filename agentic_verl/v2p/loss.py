"""V2P's pointer loss: KL(label || pointer distribution) + the "valley" term, and the weighted total.

docs/methods.md (V2P, "Loss"): L_ptr = KL(target || softmax(logits)) + attention mass on the patches whose label is 0
(the valley term pushes the distribution off the background, where KL alone is indifferent); total =
w_lm * CE + w_ptr * L_ptr. Samples are averaged; a sample's logits and label cover that sample's image patches.

>>> import torch
>>> out = pointer_loss([torch.zeros(4)], [torch.tensor([1.0, 0.0, 0.0, 0.0])])  # uniform over 4, one-hot label
>>> round(float(out["kl"]), 4), round(float(out["valley"]), 4)  # log 4 and 3/4
(1.3863, 0.75)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

# Training stages (docs/methods.md, V2P): "warmup" trains only the pointer head and the three pointer-token embedding
# rows with the LM loss off; "full" trains every weight on w_lm * CE + w_ptr * L_ptr.
STAGES = ("warmup", "full")


def pointer_loss(logits: Sequence[torch.Tensor], labels: Sequence[torch.Tensor] | torch.Tensor,
                 valley_weight: float = 1.0) -> dict[str, torch.Tensor]:
    """{"loss", "kl", "valley"}, each the mean over samples; loss = kl + valley_weight * valley.

    `logits[i]`: (N_i,) pointer logits over sample i's patches; `labels[i]`: its label (N_i values >= 0 summing
    to 1), or a padded (B, N_max) tensor whose first N_i entries of row i are used.
    """
    if len(logits) == 0:
        raise ValueError("pointer_loss needs at least one sample")
    if len(labels) != len(logits):
        raise ValueError(f"{len(logits)} pointer logits but {len(labels)} labels")
    kls, valleys = [], []
    for sample_logits, sample_label in zip(logits, labels, strict=True):
        n = sample_logits.shape[-1]
        target = sample_label[:n].to(device=sample_logits.device, dtype=torch.float32)
        if target.shape[-1] != n:
            raise ValueError(f"label has {target.shape[-1]} patches, the image has {n}")
        log_q = torch.log_softmax(sample_logits.float(), dim=-1)
        inside = target > 0
        kls.append((target[inside] * (target[inside].log() - log_q[inside])).sum())
        valleys.append(log_q[~inside].exp().sum())
    kl, valley = torch.stack(kls).mean(), torch.stack(valleys).mean()
    return {"loss": kl + valley_weight * valley, "kl": kl, "valley": valley}


def total_loss(lm_loss: torch.Tensor | None, ptr_loss: torch.Tensor | None, lm_weight: float = 1.0,
               pointer_weight: float = 1.0) -> torch.Tensor | None:
    """w_lm * CE + w_ptr * L_ptr; a missing term (None) or a zero weight drops out; None when both do."""
    terms = [w * t for w, t in ((lm_weight, lm_loss), (pointer_weight, ptr_loss)) if t is not None and w != 0]
    return sum(terms[1:], terms[0]) if terms else None
